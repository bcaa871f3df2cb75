package client

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/internal/builtin"
	"github.com/ctrlkit/ctrlkit/internal/fencehook"
	"github.com/ctrlkit/ctrlkit/internal/object"
)

// typed is the Client For returns: a typed client for T built as client-go builds its own,
// over the clientset's REST client of T's group or its fake (builtin.Client).
type typed[T Object] struct {
	b  builtin.Type
	cs kubernetes.Interface

	// The typed client of a cluster-scoped resource, built once.
	cluster builtin.Ops[T]
}

var _ Client[*metav1.PartialObjectMetadata] = (*typed[*metav1.PartialObjectMetadata])(nil)

func (c *typed[T]) Resource() schema.GroupVersionResource     { return c.b.GVR }
func (c *typed[T]) GroupVersionKind() schema.GroupVersionKind { return c.b.GVK }
func (c *typed[T]) Namespaced() bool                          { return c.b.Namespaced }

// resource returns the typed client of namespace ns.
func (c *typed[T]) resource(ns string) (builtin.Ops[T], error) {
	if !c.b.Namespaced && c.cluster != nil {
		return c.cluster, nil
	}
	ops, err := builtin.Client[T](c.b, c.cs, ns)
	if err != nil {
		return nil, fmt.Errorf("client: %s: %w: %w", resourceName(c.b.GVR), ErrInvalidInput, err)
	}
	return ops, nil
}

// forObject validates obj and returns the typed client of its namespace.
func (c *typed[T]) forObject(verb string, obj T) (builtin.Ops[T], error) {
	var zero T
	if obj == zero || object.IsNil(obj) {
		return nil, fmt.Errorf("client: %s %s: nil object: %w", verb, resourceName(c.b.GVR), ErrInvalidInput)
	}
	if err := checkNamespace(verb, c.b.GVR, c.b.Namespaced, obj.GetNamespace(), obj.GetName(), false); err != nil {
		return nil, err
	}
	ops, err := c.resource(obj.GetNamespace())
	return ops, err
}

func (c *typed[T]) Get(ctx context.Context, namespace, name string, opts metav1.GetOptions) (T, error) {
	var zero T
	if err := checkNamespace("get", c.b.GVR, c.b.Namespaced, namespace, name, false); err != nil {
		return zero, err
	}
	ops, err := c.resource(namespace)
	if err != nil {
		return zero, err
	}
	return ops.Get(ctx, name, opts)
}

func (c *typed[T]) List(ctx context.Context, namespace string, opts metav1.ListOptions) (*List[T], error) {
	if err := checkNamespace("list", c.b.GVR, c.b.Namespaced, namespace, "", true); err != nil {
		return nil, err
	}
	ops, err := c.resource(namespace)
	if err != nil {
		return nil, err
	}
	res, err := ops.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	if object.IsNil(res) {
		return nil, fmt.Errorf("client: list %s: the typed client returned no list and no error", resourceName(c.b.GVR))
	}
	out := &List[T]{Items: builtin.Items[T](c.b, res)}
	if lm, ok := res.(metav1.ListInterface); ok {
		out.ResourceVersion = lm.GetResourceVersion()
		out.Continue = lm.GetContinue()
		out.RemainingItemCount = lm.GetRemainingItemCount()
	}
	return out, nil
}

func (c *typed[T]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	ops, err := c.forObject("create", obj)
	if err != nil {
		var zero T
		return zero, err
	}
	return c.fenced(ctx)(ops.Create(ctx, obj, opts))
}

func (c *typed[T]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	ops, err := c.forObject("update", obj)
	if err != nil {
		var zero T
		return zero, err
	}
	return c.fenced(ctx)(ops.Update(ctx, obj, opts))
}

func (c *typed[T]) UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	var zero T
	if !c.b.Status {
		return zero, fmt.Errorf("client: update status of %s: %w", resourceName(c.b.GVR), ErrNoStatus)
	}
	ops, err := c.forObject("update status of", obj)
	if err != nil {
		return zero, err
	}
	return c.fenced(ctx)(ops.UpdateStatus(ctx, obj, opts))
}

func (c *typed[T]) Patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error) {
	var zero T
	if err := checkNamespace("patch", c.b.GVR, c.b.Namespaced, namespace, name, false); err != nil {
		return zero, err
	}
	ops, err := c.resource(namespace)
	if err != nil {
		return zero, err
	}
	return c.fenced(ctx)(ops.Patch(ctx, name, pt, data, opts, subresources...))
}

// Apply sends obj as an apply patch (what the generated Apply methods send too), which needs
// no generated apply-configuration type.
func (c *typed[T]) Apply(ctx context.Context, obj T, opts metav1.ApplyOptions, subresources ...string) (T, error) {
	var zero T
	ops, err := c.forObject("apply", obj)
	if err != nil {
		return zero, err
	}
	data, err := applyConfiguration(c.b.GVK, obj, opts)
	if err != nil {
		return zero, fmt.Errorf("client: apply %s %s: %w", resourceName(c.b.GVR), objectKey(obj.GetNamespace(), obj.GetName()), err)
	}
	return c.fenced(ctx)(ops.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, opts.ToPatchOptions(), subresources...))
}

func (c *typed[T]) Delete(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error {
	if err := checkNamespace("delete", c.b.GVR, c.b.Namespaced, namespace, name, false); err != nil {
		return err
	}
	ops, err := c.resource(namespace)
	if err != nil {
		return err
	}
	if err := ops.Delete(ctx, name, opts); err != nil {
		return err
	}
	fencehook.Deleted(ctx, c.b.GVR.GroupResource(), namespace, name)
	return nil
}

// applyConfiguration encodes obj as the body of a server-side apply: apiVersion and kind set
// (typed objects carry none), managedFields dropped (the API server refuses them in an apply)
// and null fields left out, so that a nil pointer, slice or map in obj claims nothing (a Go
// struct encodes those as null where its field has no omitempty, e.g. creationTimestamp).
func applyConfiguration(gvk schema.GroupVersionKind, obj runtime.Object, opts metav1.ApplyOptions) ([]byte, error) {
	if opts.FieldManager == "" {
		return nil, fmt.Errorf("ApplyOptions.FieldManager is required: %w", ErrInvalidInput)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	dropNulls(m)
	unstructured.RemoveNestedField(m, "metadata", "managedFields")
	m["apiVersion"], m["kind"] = gvk.GroupVersion().String(), gvk.Kind
	return json.Marshal(m)
}

// dropNulls removes null values from maps, recursively (lists included).
func dropNulls(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == nil {
				delete(x, k)
				continue
			}
			dropNulls(e)
		}
	case []any:
		for _, e := range x {
			dropNulls(e)
		}
	}
}

// fenced returns a pass-through of a write's result that reports a successful write to the
// fence recorder of ctx (a controller's Reconcile with Options.Fences.Auto).
func (c *typed[T]) fenced(ctx context.Context) func(T, error) (T, error) {
	return func(out T, err error) (T, error) {
		if err == nil {
			fencehook.Written(ctx, c.b.GVR.GroupResource(), out)
		}
		return out, err
	}
}
