package v1_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ctrlkit/ctrlkit/customresource"
	webappv1 "github.com/ctrlkit/ctrlkit/examples/webapp/api/v1"
)

// A WebApp as a user writes it, and the Ready condition as its controller reports it.
func Example() {
	app := &webappv1.WebApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop", Generation: 1},
		Spec:       webappv1.WebAppSpec{Image: "nginx:1.27", Replicas: new(int32(2))},
	}
	app.Status.ObservedGeneration = app.Generation
	app.Status.ReadyReplicas = 2
	meta.SetStatusCondition(&app.Status.Conditions, metav1.Condition{
		Type: webappv1.ConditionReady, Status: metav1.ConditionTrue, Reason: "ReplicasReady",
		ObservedGeneration: app.Generation,
	})
	fmt.Println(webappv1.GVR.Resource, app.Name, app.Spec.Image, *app.Spec.Replicas)
	fmt.Println(meta.IsStatusConditionTrue(app.Status.Conditions, webappv1.ConditionReady))
	// Output:
	// webapps shop nginx:1.27 2
	// true
}

// AddToScheme registers WebApp and WebAppList, e.g. in a Manager's Options.Scheme, so that
// informers and event recorders know their kind.
func Example_scheme() {
	scheme := runtime.NewScheme()
	if err := webappv1.AddToScheme(scheme); err != nil {
		fmt.Println(err)
		return
	}
	kinds, _, _ := scheme.ObjectKinds(&webappv1.WebApp{})
	fmt.Println(kinds[0])
	// Output: examples.ctrlkit.dev/v1, Kind=WebApp
}

// CRDManifest is the generated CRD; in a test, VerifyCRD keeps it honest.
func Example_verifyCRD() {
	err := customresource.VerifyCRD(webappv1.CRDManifest, webappv1.Version, &webappv1.WebApp{})
	fmt.Println(err)
	// Output: <nil>
}
