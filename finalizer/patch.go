package finalizer

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/ctrlkit/ctrlkit/internal/object"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
)

// Object is a pointer to an API object, such as *corev1.ConfigMap, a custom resource's Go type
// or *unstructured.Unstructured. It is the same type as informer.Object (ctrlkit's one object
// constraint), without finalizer depending on informer.
type Object = object.Object

// Patcher sends a patch to one object of kind T by name. It is the Patch method client-go's
// typed clients already have, so they are Patchers without an adapter:
// clientset.CoreV1().ConfigMaps(ns) is a Patcher[*corev1.ConfigMap] and
// dynamicClient.Resource(gvr).Namespace(ns) a Patcher[*unstructured.Unstructured]. For a
// cluster-scoped kind use the client without a namespace. ctrlkit's client.Client[T] and
// customresource.Client[T] take the namespace as an argument: InNamespace adapts them.
type Patcher[T Object] interface {
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// PatcherFunc adapts a function to Patcher, for test doubles and wrappers.
type PatcherFunc[T Object] func(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)

// Patch calls f.
func (f PatcherFunc[T]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error) {
	return f(ctx, name, pt, data, opts, subresources...)
}

// NamespacedPatcher is the Patch method of ctrlkit's clients (client.Client[T],
// customresource.Client[T]), which take the namespace as an argument.
type NamespacedPatcher[T Object] interface {
	Patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// InNamespace is the Patcher of namespace ("" for a cluster-scoped kind) through p.
func InNamespace[T Object](p NamespacedPatcher[T], namespace string) Patcher[T] {
	return PatcherFunc[T](func(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error) {
		return p.Patch(ctx, namespace, name, pt, data, opts, subresources...)
	})
}

// standard are the finalizer names Kubernetes itself defines, the only names without a domain
// prefix the API server accepts on built-in types.
var standard = []string{metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents, "kubernetes"}

// ValidateName checks a finalizer name as the API server does: a qualified name
// ("example.com/cleanup": a DNS subdomain prefix, a slash, and a name of at most 63
// alphanumerics, '-', '_' or '.'), or one of the standard names "kubernetes", "orphan" and
// "foregroundDeletion". Built-in types reject a name without a prefix; custom resources accept
// it with a warning, as a name that may collide with another controller's. The error wraps
// ErrInvalidName.
func ValidateName(name string) error {
	if slices.Contains(standard, name) {
		return nil
	}
	if msgs := validation.IsQualifiedName(name); len(msgs) > 0 {
		return fmt.Errorf("%w %q: %s", ErrInvalidName, name, strings.Join(msgs, "; "))
	}
	if !strings.Contains(name, "/") {
		return fmt.Errorf("%w %q: needs a domain prefix, as in \"example.com/%s\", so it cannot collide with another controller's", ErrInvalidName, name, name)
	}
	return nil
}

// Has reports whether obj carries the finalizer name. A nil obj has none. It is
// controller-runtime's controllerutil.ContainsFinalizer (same answer, and it does not validate
// name either), except that a nil obj gives false instead of a panic.
func Has(obj metav1.Object, name string) bool {
	if object.IsNil(obj) {
		return false
	}
	return slices.Contains(obj.GetFinalizers(), name)
}

// Add adds the finalizers names that obj lacks, after those it has, with one JSON merge patch
// that carries obj's resourceVersion as a precondition: when the object changed since obj was
// read, the API server answers 409 Conflict (apierrors.IsConflict) instead of overwriting the
// list, so a finalizer another writer added meanwhile is never lost. Retry from a fresh read (a
// controller does so by returning the error).
//
// When obj already has every name nothing is sent and obj itself is returned; otherwise the
// object the server returned. obj is never modified, so it may come from an informer's cache.
// Every name must pass ValidateName. A finalizer cannot be added to an object being deleted:
// that is ErrBeingDeleted, and nothing is sent.
func Add[T Object](ctx context.Context, p Patcher[T], obj T, names ...string) (T, error) {
	if err := check(p, obj); err != nil {
		return obj, fmt.Errorf("finalizer: add %q: %w", names, err)
	}
	for _, n := range names {
		if err := ValidateName(n); err != nil {
			return obj, fmt.Errorf("finalizer: add to %s: %w", describe(obj), err)
		}
	}
	current := obj.GetFinalizers()
	next := slices.Clone(current)
	for _, n := range names {
		if !slices.Contains(next, n) {
			next = append(next, n)
		}
	}
	if len(next) == len(current) {
		return obj, nil
	}
	if obj.GetDeletionTimestamp() != nil {
		return obj, fmt.Errorf("finalizer: add %q to %s: %w", next[len(current):], describe(obj), ErrBeingDeleted)
	}
	return patch(ctx, p, obj, next, "add", names)
}

// Remove removes the finalizers names from obj with one JSON merge patch that carries obj's
// resourceVersion as a precondition, as Add does: when the object changed since obj was read,
// the API server answers 409 Conflict and nothing is removed, so the list the patch writes never
// drops a finalizer someone else added meanwhile.
//
// When obj has none of the names nothing is sent and obj itself is returned; otherwise the
// object the server returned. Removing the last finalizer of an object being deleted lets the
// API server delete it: the returned object is then its last state. obj is never modified. Names
// are not validated: a custom resource may carry a name the server only warned about, and
// removing it must stay possible.
func Remove[T Object](ctx context.Context, p Patcher[T], obj T, names ...string) (T, error) {
	if err := check(p, obj); err != nil {
		return obj, fmt.Errorf("finalizer: remove %q: %w", names, err)
	}
	current := obj.GetFinalizers()
	next := slices.DeleteFunc(slices.Clone(current), func(f string) bool { return slices.Contains(names, f) })
	if len(next) == len(current) {
		return obj, nil
	}
	return patch(ctx, p, obj, next, "remove", names)
}

// finalizersPatch is a JSON merge patch (RFC 7386) of metadata.finalizers. A merge patch
// replaces a list whole, so it carries the complete new list and the resourceVersion it was
// computed from: the server compares that resourceVersion with the stored one and answers
// Conflict when they differ. Merge patches work alike on built-in types, custom resources and
// the dynamic client (custom resources take no strategic merge patch).
type finalizersPatch struct {
	Metadata struct {
		// No omitempty: an empty list is sent as null, which removes the field.
		Finalizers      []string `json:"finalizers"`
		ResourceVersion string   `json:"resourceVersion"`
	} `json:"metadata"`
}

// patch writes the finalizer list next onto obj's object.
func patch[T Object](ctx context.Context, p Patcher[T], obj T, next []string, op string, names []string) (T, error) {
	rv := obj.GetResourceVersion()
	if rv == "" {
		return obj, fmt.Errorf("finalizer: %s %q on %s: %w", op, names, describe(obj), ErrMissingResourceVersion)
	}
	var body finalizersPatch
	if len(next) > 0 {
		body.Metadata.Finalizers = next
	}
	body.Metadata.ResourceVersion = rv
	data, err := json.Marshal(&body)
	if err != nil {
		return obj, fmt.Errorf("finalizer: %s %q on %s: %w", op, names, describe(obj), err)
	}
	out, err := p.Patch(ctx, obj.GetName(), types.MergePatchType, data, metav1.PatchOptions{})
	if err != nil {
		return obj, fmt.Errorf("finalizer: %s %q on %s: %w", op, names, describe(obj), err)
	}
	var zero T
	if out == zero {
		return obj, fmt.Errorf("finalizer: %s %q on %s: the patcher returned no object and no error", op, names, describe(obj))
	}
	klog.FromContext(ctx).V(4).Info("Patched finalizers", "object", klog.KObj(obj), "op", op, "names", names, "finalizers", next)
	return out, nil
}

// check refuses a nil patcher or object, which would otherwise panic further down.
func check[T Object](p Patcher[T], obj T) error {
	if object.IsNil(p) {
		return fmt.Errorf("nil patcher: %w", ErrInvalidInput)
	}
	var zero T
	if obj == zero || object.IsNil(obj) {
		return fmt.Errorf("nil object: %w", ErrInvalidInput)
	}
	return nil
}

// describe names obj in errors: its Go type and namespace/name.
func describe(obj metav1.Object) string {
	return fmt.Sprintf("%T %s", obj, key(obj))
}

func key(obj metav1.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}
