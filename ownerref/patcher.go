package ownerref

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// Patcher sends a patch to one object of kind T. It is all a Claimer needs from a client, so
// any typed client, the dynamic client or a test double works. The type parameter ties a
// Patcher to the Claimer of the same kind.
type Patcher[T metav1.Object] interface {
	Patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte) error
}

// PatcherFunc adapts a function to Patcher.
type PatcherFunc[T metav1.Object] func(ctx context.Context, namespace, name string, pt types.PatchType, data []byte) error

// Patch calls f.
func (f PatcherFunc[T]) Patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte) error {
	return f(ctx, namespace, name, pt, data)
}

// PatchClient is the Patch method that every client-go typed client (PodInterface,
// ReplicaSetInterface, ConfigMapInterface, ...) and the dynamic ResourceInterface have.
type PatchClient[T any] interface {
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// ClientPatcher builds a Patcher from a client-go getter of namespaced clients, such as
// client.CoreV1().Pods, client.AppsV1().ReplicaSets or dynamicClient.Resource(gvr).Namespace;
// T is inferred from the client's Patch result:
//
//	rsPatcher := ownerref.ClientPatcher(client.AppsV1().ReplicaSets) // Patcher[*appsv1.ReplicaSet]
//
// For a cluster-scoped kind pass a function that ignores the namespace. The patched object
// the server returns is dropped: claims go on from the cached objects.
func ClientPatcher[T metav1.Object, C PatchClient[T]](forNamespace func(namespace string) C) Patcher[T] {
	return PatcherFunc[T](func(ctx context.Context, namespace, name string, pt types.PatchType, data []byte) error {
		if forNamespace == nil {
			return fmt.Errorf("%w: ClientPatcher was given a nil client getter", ErrInvalidClaimer)
		}
		_, err := forNamespace(namespace).Patch(ctx, name, pt, data, metav1.PatchOptions{})
		return err
	})
}

// PodsPatcher patches Pods through client.CoreV1().
func PodsPatcher(client kubernetes.Interface) Patcher[*corev1.Pod] {
	if object.IsNil(client) {
		return PatcherFunc[*corev1.Pod](func(context.Context, string, string, types.PatchType, []byte) error {
			return fmt.Errorf("%w: PodsPatcher was given a nil clientset", ErrInvalidClaimer)
		})
	}
	return ClientPatcher(client.CoreV1().Pods)
}
