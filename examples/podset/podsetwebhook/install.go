package podsetwebhook

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1beta1"
)

// DefaultConfigurationName names the webhook configurations Install writes.
const DefaultConfigurationName = "podset-webhooks"

// FieldManager is the field manager of Install's server-side apply of the CRD.
const FieldManager = "podset-webhook"

// InstallOptions say where the API server reaches the webhooks.
type InstallOptions struct {
	// URL is the https base URL of the webhook server as the API server reaches it, such as
	// "https://10.0.0.12:9443". Required.
	URL string
	// CABundle is the PEM CA the API server verifies the server's certificate with. Required.
	CABundle []byte
	// Namespace, when set, limits the admission webhooks to PodSets in that namespace (the
	// controller's --namespace). "" means every namespace.
	Namespace string
	// Name names the two webhook configurations. "" means DefaultConfigurationName.
	Name string
}

// Install points the API server at the webhooks: it applies (server-side, as FieldManager) the
// two-version CRD (v1beta1.CRDManifest) with its conversion webhook at opts.URL, waits until
// the CRD is established, and applies the mutating and validating configurations. It is
// idempotent: run at every start, it keeps the caBundle and URL current. Every write names its
// object, so the rights it needs can be granted for those names only
// (examples/podset/deploy/rbac-webhook.yaml).
func Install(ctx context.Context, client kubernetes.Interface, dyn dynamic.Interface, opts InstallOptions) error {
	if opts.URL == "" || len(opts.CABundle) == 0 {
		return errors.New("podsetwebhook: Install needs a URL and a CA bundle")
	}
	if opts.Name == "" {
		opts.Name = DefaultConfigurationName
	}
	logger := klog.FromContext(ctx)
	if err := applyCRD(ctx, dyn, opts); err != nil {
		return err
	}
	url := opts.URL
	mutating, validating := Configurations(opts.Name, admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: opts.CABundle})
	if opts.Namespace != "" {
		sel := &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: opts.Namespace}}
		mutating.Webhooks[0].NamespaceSelector, validating.Webhooks[0].NamespaceSelector = sel, sel
	}
	admission := client.AdmissionregistrationV1()
	if err := applyConfiguration(ctx, "MutatingWebhookConfiguration", mutating, admission.MutatingWebhookConfigurations().Patch); err != nil {
		return err
	}
	if err := applyConfiguration(ctx, "ValidatingWebhookConfiguration", validating, admission.ValidatingWebhookConfigurations().Patch); err != nil {
		return err
	}
	logger.Info("PodSet webhooks installed", "url", opts.URL, "configurations", opts.Name, "crd", v1beta1.CRDName)
	return nil
}

// applyConfiguration writes a webhook configuration by server-side apply (field manager
// FieldManager): one request whether it exists or not, which the API server authorizes as a
// patch of that name and, when it creates the object, a create of that name. So RBAC can
// grant both for the one name (resourceNames), where a plain create could only be granted for
// every webhook configuration, which would let its holder intercept any request.
func applyConfiguration[T interface {
	runtime.Object
	GetName() string
}](ctx context.Context, kind string, obj T, patch func(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (T, error)) error {
	name := obj.GetName()
	obj.GetObjectKind().SetGroupVersionKind(admissionregistrationv1.SchemeGroupVersion.WithKind(kind)) // apply needs them
	data, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("podsetwebhook: %s %s: %w", kind, name, err)
	}
	if _, err := patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: FieldManager, Force: ptr.To(true)}); err != nil {
		return fmt.Errorf("podsetwebhook: %s %s: %w", kind, name, err)
	}
	return nil
}

// applyCRD applies v1beta1.CRDManifest with the conversion webhook at opts.URL.
func applyCRD(ctx context.Context, dyn dynamic.Interface, opts InstallOptions) error {
	js, err := utilyaml.ToJSON(v1beta1.CRDManifest)
	if err != nil {
		return fmt.Errorf("podsetwebhook: the CRD manifest: %w", err)
	}
	crd := &unstructured.Unstructured{}
	if err := crd.UnmarshalJSON(js); err != nil {
		return fmt.Errorf("podsetwebhook: the CRD manifest: %w", err)
	}
	clientConfig := map[string]any{"url": opts.URL + ConvertPath, "caBundle": base64.StdEncoding.EncodeToString(opts.CABundle)}
	if err := unstructured.SetNestedMap(crd.Object, clientConfig, "spec", "conversion", "webhook", "clientConfig"); err != nil {
		return fmt.Errorf("podsetwebhook: the CRD manifest: %w", err)
	}
	if _, err := dyn.Resource(customresource.CRDResource).Apply(ctx, crd.GetName(), crd,
		metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return fmt.Errorf("podsetwebhook: applying CRD %s: %w", crd.GetName(), err)
	}
	// It exists now; this waits until it is established.
	return customresource.EnsureCRDFromYAML(ctx, dyn, v1beta1.CRDManifest)
}
