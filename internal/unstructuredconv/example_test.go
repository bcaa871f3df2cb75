package unstructuredconv_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/internal/unstructuredconv"
)

type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Replicas int32 `json:"replicas"`
	} `json:"spec"`
}

// A value that does not fit its field is reported with the field's path.
func ExampleConverter_FromUnstructured() {
	conv, err := unstructuredconv.New[*Widget](schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
	if err != nil {
		panic(err)
	}
	_, err = conv.FromUnstructured(map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"spec": map[string]any{"replicas": "three"},
	})
	fmt.Println(err)
	// Output: spec.replicas: expected int32, got string "three"
}
