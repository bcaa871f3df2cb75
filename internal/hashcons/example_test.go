package hashcons_test

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/internal/hashcons"
)

// Equal sub-objects become one instance from their second sighting on; each
// object keeps its own top-level struct.
func Example() {
	table := hashcons.New()
	newPod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}}}
	}
	a, b, c := newPod("a"), newPod("b"), newPod("c")
	for _, p := range []*corev1.Pod{a, b, c} {
		table.Share(p, nil)
	}
	sameLabels := func(x, y *corev1.Pod) bool {
		return reflect.ValueOf(x.Labels).Pointer() == reflect.ValueOf(y.Labels).Pointer()
	}
	fmt.Println("b and c share labels:", sameLabels(b, c))
	fmt.Println("names:", a.Name, b.Name, c.Name)
	// Output:
	// b and c share labels: true
	// names: a b c
}
