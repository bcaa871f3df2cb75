package client

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/internal/typedlist"
)

// Object is what every type served by this package satisfies: a pointer to a Kubernetes API
// struct such as *corev1.Pod. It is the same constraint as informer.Object and
// customresource.Object, so one type argument serves all three packages.
type Object interface {
	comparable
	metav1.Object
	runtime.Object
}

// List is one page of a LIST answer: the list metadata (resourceVersion to start a watch from,
// the continue token of the next page) and the items. It is the same type as
// customresource.List.
type List[T Object] = typedlist.List[T]

// Client reads and writes the objects of one resource as Go values of type T. For returns one
// for every built-in type; *customresource.Client[T] is one for a custom resource; NewCached
// wraps either with reads from an informer's cache. Every helper of this package takes a
// Client, so it works for built-in and custom resources alike.
//
// The namespace is an argument (Get, List, Patch, Delete) or the object's own (Create,
// Update, UpdateStatus, Apply), never a state of the client. For a namespaced resource every
// call but List needs one; List with metav1.NamespaceAll ("") lists all namespaces. A
// cluster-scoped resource takes none. A call that breaks these rules fails before any request
// with an error naming the object and the resource.
//
// Objects a Client returns are the caller's to change (For's and customresource's decode
// fresh ones, NewCached's are copies); the helpers rely on that.
//
// Errors from the API server come back unwrapped, as client-go returns them: test them with
// k8s.io/apimachinery/pkg/api/errors (apierrors.IsNotFound, IsConflict, ...).
type Client[T Object] interface {
	// Get returns the object namespace/name.
	Get(ctx context.Context, namespace, name string, opts metav1.GetOptions) (T, error)
	// List returns the objects of namespace (all namespaces for "") that match opts.
	List(ctx context.Context, namespace string, opts metav1.ListOptions) (*List[T], error)
	// Create creates obj in obj's namespace and returns the object as stored.
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	// Update replaces obj (its resourceVersion, when set, is a precondition). A resource with
	// a status subresource ignores obj's status here; use UpdateStatus.
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	// UpdateStatus writes obj's status through the status subresource.
	UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	// Patch patches the object namespace/name, or one of its subresources (such as
	// "status"), with data of type pt.
	Patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
	// Apply sends obj as a server-side apply configuration owned by opts.FieldManager
	// (required): every field obj sets is claimed by that manager. opts.Force takes fields
	// owned by other managers instead of failing with a Conflict. Fields nil in obj are
	// left out, but a Go field without omitempty claims its zero value; a resourceVersion
	// in obj makes the apply conditional on it (clear it for an unconditional apply).
	Apply(ctx context.Context, obj T, opts metav1.ApplyOptions, subresources ...string) (T, error)
	// Delete deletes the object namespace/name. opts.Preconditions (see Preconditions) make
	// the delete conditional on the object's UID and resourceVersion.
	Delete(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error

	// Resource is the resource the client serves, such as pods or deployments.apps.
	Resource() schema.GroupVersionResource
	// GroupVersionKind is the kind of T, for owner references and apply configurations.
	GroupVersionKind() schema.GroupVersionKind
	// Namespaced reports whether the resource is namespaced.
	Namespaced() bool
}
