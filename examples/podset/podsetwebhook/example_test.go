package podsetwebhook_test

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/examples/podset/podsetwebhook"
)

// The configurations of the PodSet webhooks, reached through a Service in a cluster.
func ExampleConfigurations() {
	mutating, validating := podsetwebhook.Configurations("podset-webhooks", admissionregistrationv1.WebhookClientConfig{
		Service: &admissionregistrationv1.ServiceReference{Namespace: "podset-system", Name: "podset-webhook", Port: ptr.To[int32](443)},
	})
	fmt.Println(mutating.Webhooks[0].Name, *mutating.Webhooks[0].ClientConfig.Service.Path)
	fmt.Println(validating.Webhooks[0].Name, *validating.Webhooks[0].ClientConfig.Service.Path, *validating.Webhooks[0].FailurePolicy)
	// Output:
	// mpodset.examples.ctrlkit.dev /mutate-podset
	// vpodset.examples.ctrlkit.dev /validate-podset Fail
}

// v1alpha1 and v1beta1 through the conversion webhook's handler: spec.replicas becomes
// spec.scale.replicas.
func ExampleNewConversion() {
	c, err := podsetwebhook.NewConversion()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Versions())
	out, err := c.Convert([]byte(`{"apiVersion":"examples.ctrlkit.dev/v1alpha1","kind":"PodSet","metadata":{"name":"web"},"spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},"template":{}}}`),
		"examples.ctrlkit.dev/v1beta1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(out))
	// Output:
	// [examples.ctrlkit.dev/v1beta1 examples.ctrlkit.dev/v1alpha1]
	// {"kind":"PodSet","apiVersion":"examples.ctrlkit.dev/v1beta1","metadata":{"name":"web"},"spec":{"scale":{"replicas":3},"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{},"spec":{"containers":null}}},"status":{}}
}
