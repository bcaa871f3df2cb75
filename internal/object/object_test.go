package object_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

func nameOf[T object.Object](obj T) string { return obj.GetNamespace() + "/" + obj.GetName() }

func Example() {
	fmt.Println(nameOf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}}))
	// Output: default/web-0
}
