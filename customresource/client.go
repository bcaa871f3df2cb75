package customresource

import (
	"context"
	"fmt"

	"github.com/ctrlkit/ctrlkit/internal/object"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/ctrlkit/ctrlkit/internal/fencehook"
	"github.com/ctrlkit/ctrlkit/internal/typedlist"
)

// Object is what a custom resource Go type satisfies: a pointer to a struct that embeds
// metav1.TypeMeta and metav1.ObjectMeta and has DeepCopyObject, such as
// *v1alpha1.PodSet. It is the same type as informer.Object (one constraint across
// ctrlkit), so one T serves both packages.
type Object = object.Object

// Client is a typed client for one custom resource, built on the dynamic client. It has
// the method set of client.Client[T], so every helper of package client (CreateOrUpdate,
// CreateOrPatch, NewCached, ...) works with it, plus Watch, DeleteCollection and the
// conversions.
//
// The namespace is an argument (Get, List, Patch, Delete, DeleteCollection, Watch) or the
// object's own (Create, Update, UpdateStatus, Apply). A namespaced resource (the default;
// WithClusterScope declares a cluster-scoped one) needs a namespace in every call but List,
// Watch and DeleteCollection, where "" means all namespaces; a cluster-scoped resource
// takes none.
// A call that breaks these rules fails before any request with an error naming the
// object and wrapping ErrInvalidInput.
//
// A Client is safe for concurrent use; it holds no state besides its configuration.
type Client[T Object] struct {
	codec         *codec[T]
	dyn           dynamic.NamespaceableResourceInterface
	clusterScoped bool
}

// Option configures NewClient.
type Option func(*clientOptions)

type clientOptions struct {
	kind          string
	scheme        *runtime.Scheme
	clusterScoped bool
}

// WithClusterScope declares the resource cluster-scoped (its CRD's spec.scope is Cluster).
// Without it the resource is taken to be namespaced, as most are.
func WithClusterScope() Option {
	return func(o *clientOptions) { o.clusterScoped = true }
}

// WithKind sets the kind written into outgoing objects whose TypeMeta is empty and
// expected of incoming ones. It wins over WithScheme.
func WithKind(kind string) Option {
	return func(o *clientOptions) { o.kind = kind }
}

// WithScheme takes the kind from scheme, which must have T registered in the
// resource's group and version (for example by the API package's AddToScheme).
func WithScheme(scheme *runtime.Scheme) Option {
	return func(o *clientOptions) { o.scheme = scheme }
}

// NewClient returns a typed client for the custom resource gvr whose objects are T.
//
// The kind written into outgoing objects (when T's TypeMeta is left empty) is, in
// order: the WithKind option, T's kind in the WithScheme scheme, or the name of T's
// struct type (PodSet for *v1alpha1.PodSet), which is the convention of every code
// generator. The API version is always gvr's group and version.
//
// NewClient fails, with an error wrapping ErrInvalidInput, for a nil dyn, a gvr without
// version or resource, a T that is not a pointer to a struct, or a scheme that does not
// know T in gvr's group and version.
func NewClient[T Object](dyn dynamic.Interface, gvr schema.GroupVersionResource, opts ...Option) (*Client[T], error) {
	var o clientOptions
	for _, opt := range opts {
		opt(&o)
	}
	c, err := newCodec[T](gvr, o)
	if err != nil {
		return nil, err
	}
	if dyn == nil {
		return nil, fmt.Errorf("customresource: client for %s: nil dynamic.Interface: %w", resourceString(gvr), ErrInvalidInput)
	}
	return &Client[T]{codec: c, dyn: dyn.Resource(gvr), clusterScoped: o.clusterScoped}, nil
}

// Namespaced reports whether the resource is namespaced (NewClient without WithClusterScope).
func (c *Client[T]) Namespaced() bool { return !c.clusterScoped }

// ri returns the dynamic client of namespace ns after checking the namespace rules (see
// Client); all allows "" for a namespaced resource (all namespaces).
func (c *Client[T]) ri(verb, ns, name string, all bool) (dynamic.ResourceInterface, error) {
	key := name
	if ns != "" {
		key = ns + "/" + name
	}
	switch {
	case !c.clusterScoped && ns == "" && !all:
		return nil, fmt.Errorf("customresource: %s %s %q: the resource is namespaced and no namespace was given (use WithClusterScope for a cluster-scoped resource): %w", verb, resourceString(c.codec.gvr), key, ErrInvalidInput)
	case c.clusterScoped && ns != "":
		return nil, fmt.Errorf("customresource: %s %s %q: the resource is cluster-scoped and takes no namespace: %w", verb, resourceString(c.codec.gvr), key, ErrInvalidInput)
	case name == "" && !all && verb != "create":
		return nil, fmt.Errorf("customresource: %s %s: no name given: %w", verb, resourceString(c.codec.gvr), ErrInvalidInput)
	case ns == "":
		return c.dyn, nil
	}
	return c.dyn.Namespace(ns), nil
}

// riFor is ri for an object's own namespace and name; obj has passed the codec, so it is
// not nil.
func (c *Client[T]) riFor(verb string, obj T) (dynamic.ResourceInterface, error) {
	return c.ri(verb, obj.GetNamespace(), obj.GetName(), false)
}

// Resource returns the resource this client serves.
func (c *Client[T]) Resource() schema.GroupVersionResource { return c.codec.gvr }

// GroupVersionKind returns the group, version and kind of T's objects, e.g. for the
// owner references of their children.
func (c *Client[T]) GroupVersionKind() schema.GroupVersionKind { return c.codec.gvk }

// FromUnstructured converts an object of this resource, as the dynamic client or a
// dynamic informer hands it out, to T. It fails with a *ConversionError naming the
// object when its apiVersion or kind (where set) are not the client's, or a field does
// not fit T. It never panics on malformed input: a panic inside the converter (or in a
// custom UnmarshalJSON of T) comes back as a *ConversionError too.
func (c *Client[T]) FromUnstructured(u *unstructured.Unstructured) (T, error) {
	return c.codec.fromUnstructured(u)
}

// ToUnstructured converts obj to the unstructured form the dynamic client sends,
// setting apiVersion and kind where obj leaves them empty. obj is not modified. A nil
// obj is an error wrapping ErrInvalidInput; a failure of the converter is a
// *ConversionError.
func (c *Client[T]) ToUnstructured(obj T) (*unstructured.Unstructured, error) {
	return c.codec.toUnstructured(obj)
}

// List is one page of a LIST answer: the list metadata (resourceVersion to start a
// watch from, the continue token of the next page) and the items, converted to T. It is
// the same type as client.List.
type List[T Object] = typedlist.List[T]

// Get returns the object namespace/name.
func (c *Client[T]) Get(ctx context.Context, namespace, name string, opts metav1.GetOptions) (T, error) {
	ri, err := c.ri("get", namespace, name, false)
	if err != nil {
		return c.codec.zero, err
	}
	return c.result(ri.Get(ctx, name, opts))
}

// List returns the objects of namespace (all namespaces for "") that match opts. If any
// item cannot be converted to T the whole call fails with a *ConversionError naming that
// item: a partial list would look like a complete one to a caller that reconciles
// against it.
func (c *Client[T]) List(ctx context.Context, namespace string, opts metav1.ListOptions) (*List[T], error) {
	ri, err := c.ri("list", namespace, "", true)
	if err != nil {
		return nil, err
	}
	ul, err := ri.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := &List[T]{Items: make([]T, 0, len(ul.Items))}
	out.ResourceVersion = ul.GetResourceVersion()
	out.Continue = ul.GetContinue()
	out.RemainingItemCount = ul.GetRemainingItemCount()
	for i := range ul.Items {
		obj, err := c.codec.fromUnstructured(&ul.Items[i])
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, obj)
	}
	return out, nil
}

// Create creates obj in obj's namespace and returns the object as stored.
func (c *Client[T]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	u, err := c.codec.toUnstructured(obj)
	if err != nil {
		return c.codec.zero, err
	}
	ri, err := c.riFor("create", obj)
	if err != nil {
		return c.codec.zero, err
	}
	return c.fenced(ctx)(c.result(ri.Create(ctx, u, opts)))
}

// Update replaces obj (status is ignored by an API server when the CRD has a status
// subresource; use UpdateStatus for it).
func (c *Client[T]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	u, err := c.codec.toUnstructured(obj)
	if err != nil {
		return c.codec.zero, err
	}
	ri, err := c.riFor("update", obj)
	if err != nil {
		return c.codec.zero, err
	}
	return c.fenced(ctx)(c.result(ri.Update(ctx, u, opts)))
}

// UpdateStatus writes obj's status through the status subresource.
func (c *Client[T]) UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	u, err := c.codec.toUnstructured(obj)
	if err != nil {
		return c.codec.zero, err
	}
	ri, err := c.riFor("update status of", obj)
	if err != nil {
		return c.codec.zero, err
	}
	return c.fenced(ctx)(c.result(ri.UpdateStatus(ctx, u, opts)))
}

// Patch patches the object namespace/name, or one of its subresources (such as
// "status"). Custom resources accept types.MergePatchType, types.JSONPatchType and
// types.ApplyPatchType; they reject strategic merge patches.
func (c *Client[T]) Patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error) {
	ri, err := c.ri("patch", namespace, name, false)
	if err != nil {
		return c.codec.zero, err
	}
	return c.fenced(ctx)(c.result(ri.Patch(ctx, name, pt, data, opts, subresources...)))
}

// Apply sends obj as a server-side apply configuration owned by opts.FieldManager
// (required). obj's metadata.managedFields are dropped (the API server refuses them in
// an apply) and so is a null creationTimestamp.
//
// Every field T serialises is applied, so the field manager claims it: a Go field
// without omitempty claims its zero value. To apply only some fields, use
// ApplyUnstructured with a map that holds just those. A resourceVersion in obj (as in
// any object read from the server) makes the apply conditional on it, failing with a
// Conflict once the object has changed; clear it for an unconditional apply.
func (c *Client[T]) Apply(ctx context.Context, obj T, opts metav1.ApplyOptions, subresources ...string) (T, error) {
	u, err := c.codec.toUnstructured(obj)
	if err != nil {
		return c.codec.zero, err
	}
	unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	if ts, found, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "creationTimestamp"); found && ts == nil {
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	}
	return c.apply(ctx, u, opts, subresources)
}

// ApplyStatus is Apply on the status subresource.
func (c *Client[T]) ApplyStatus(ctx context.Context, obj T, opts metav1.ApplyOptions) (T, error) {
	return c.Apply(ctx, obj, opts, "status")
}

// ApplyUnstructured sends config, a partial object with at least metadata.name, as a
// server-side apply configuration owned by opts.FieldManager (required). apiVersion and
// kind are filled in when config leaves them empty; config itself is not modified.
func (c *Client[T]) ApplyUnstructured(ctx context.Context, config *unstructured.Unstructured, opts metav1.ApplyOptions, subresources ...string) (T, error) {
	if config == nil {
		return c.codec.zero, fmt.Errorf("customresource: apply to %s: nil apply configuration: %w", resourceString(c.codec.gvr), ErrInvalidInput)
	}
	u := config.DeepCopy()
	c.codec.setTypeMeta(u)
	return c.apply(ctx, u, opts, subresources)
}

func (c *Client[T]) apply(ctx context.Context, u *unstructured.Unstructured, opts metav1.ApplyOptions, subresources []string) (T, error) {
	name := u.GetName()
	if name == "" {
		return c.codec.zero, fmt.Errorf("customresource: apply to %s: the apply configuration has no metadata.name: %w", resourceString(c.codec.gvr), ErrInvalidInput)
	}
	if opts.FieldManager == "" {
		return c.codec.zero, fmt.Errorf("customresource: apply of %s %q: ApplyOptions.FieldManager is required: %w", resourceString(c.codec.gvr), name, ErrInvalidInput)
	}
	ri, err := c.ri("apply", u.GetNamespace(), name, false)
	if err != nil {
		return c.codec.zero, err
	}
	return c.fenced(ctx)(c.result(ri.Apply(ctx, name, u, opts, subresources...)))
}

// Delete deletes the object namespace/name. opts.Preconditions (client.Preconditions)
// make the delete conditional on the object's UID and resourceVersion.
func (c *Client[T]) Delete(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error {
	ri, err := c.ri("delete", namespace, name, false)
	if err != nil {
		return err
	}
	if err := ri.Delete(ctx, name, opts); err != nil {
		return err
	}
	fencehook.Deleted(ctx, c.codec.gvr.GroupResource(), namespace, name)
	return nil
}

// DeleteCollection deletes the objects of namespace (all namespaces for "") that match
// listOpts.
func (c *Client[T]) DeleteCollection(ctx context.Context, namespace string, opts metav1.DeleteOptions, listOpts metav1.ListOptions) error {
	ri, err := c.ri("delete collection of", namespace, "", true)
	if err != nil {
		return err
	}
	return ri.DeleteCollection(ctx, opts, listOpts)
}

// Watch starts a watch of the objects of namespace (all namespaces for "") that match
// opts. The Watcher converts every event to T; see Watcher for how failures arrive.
func (c *Client[T]) Watch(ctx context.Context, namespace string, opts metav1.ListOptions) (*Watcher[T], error) {
	ri, err := c.ri("watch", namespace, "", true)
	if err != nil {
		return nil, err
	}
	w, err := ri.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	return newWatcher(c.codec, w), nil
}

// fenced returns a pass-through of a write's result that reports a successful write to the
// fence recorder of ctx (a controller's Reconcile with Options.Fences.Auto).
func (c *Client[T]) fenced(ctx context.Context) func(T, error) (T, error) {
	return func(out T, err error) (T, error) {
		if err == nil {
			fencehook.Written(ctx, c.codec.gvr.GroupResource(), out)
		}
		return out, err
	}
}

// result converts what a dynamic call returned.
func (c *Client[T]) result(u *unstructured.Unstructured, err error) (T, error) {
	if err != nil {
		return c.codec.zero, err
	}
	return c.codec.fromUnstructured(u)
}
