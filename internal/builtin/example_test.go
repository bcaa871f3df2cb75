package builtin_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/internal/builtin"
)

func ExampleNamespaced() {
	for _, r := range []string{"pods", "namespaces"} {
		ns, known := builtin.Namespaced(schema.GroupVersionResource{Version: "v1", Resource: r})
		fmt.Println(r, ns, known)
	}
	_, known := builtin.Namespaced(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "tenants"})
	fmt.Println("tenants", known)
	// Output:
	// pods true true
	// namespaces false true
	// tenants false
}
