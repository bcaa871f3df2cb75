package customresource_test

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
)

// In a test of an API package, VerifyCRD fails when the committed CRD no longer fits the
// Go types, e.g. after a field was added without running make generate.
func ExampleVerifyCRD() {
	if err := customresource.VerifyCRD(v1alpha1.CRDManifest, v1alpha1.Version, &v1alpha1.PodSet{}); err != nil {
		fmt.Println(err)
	}

	// Widget's Go type has drifted from its CRD: replicas became a string, and port and
	// paused were added to the type only.
	type WidgetSpec struct {
		Replicas string `json:"replicas"`
		Port     int32  `json:"port,omitempty"`
	}
	type Widget struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty"`
		Spec              WidgetSpec `json:"spec"`
		Paused            bool       `json:"paused,omitempty"`
	}
	manifest := []byte(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer, format: int32}
              image: {type: string}
`)
	err := customresource.VerifyCRD(manifest, "v1", &Widget{})
	fmt.Println(errors.Is(err, customresource.ErrCRDMismatch))
	fmt.Println(err)
	// Output:
	// true
	// customresource: CRD widgets.example.com version v1 and Go type customresource_test.Widget: CRD schema does not match the Go type:
	// 	spec.replicas: schema integer (int32), Go string
	// 	spec.port: no schema property, Go int32 (the API server prunes it)
	// 	spec.image: schema string, no Go field (reads drop it)
	// 	paused: no schema property, Go bool (the API server prunes it)
}
