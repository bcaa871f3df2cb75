package fakecluster

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// dynamicClient is the dynamic front end. Every request becomes a client-go testing action
// invoked on the typed clientset, so it is recorded with the typed requests and passes through
// the same reactors (fault injection, delays, a test's own) before the cluster serves it.
type dynamicClient struct {
	c  *Cluster
	cs *fake.Clientset // whose reaction chain serves the requests: the cluster's or a Connection's
}

var _ dynamic.Interface = (*dynamicClient)(nil)

// IsWatchListSemanticsUnSupported tells client-go's reflector to list and then watch instead of
// using watch-list streaming, which the cluster does not implement.
func (d *dynamicClient) IsWatchListSemanticsUnSupported() bool { return true }

func (d *dynamicClient) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return &dynamicResource{c: d.c, cs: d.cs, gvr: gvr}
}

type dynamicResource struct {
	c   *Cluster
	cs  *fake.Clientset
	gvr schema.GroupVersionResource
	ns  string
}

var _ dynamic.NamespaceableResourceInterface = (*dynamicResource)(nil)

func (r *dynamicResource) Namespace(ns string) dynamic.ResourceInterface {
	return &dynamicResource{c: r.c, cs: r.cs, gvr: r.gvr, ns: ns}
}

// invoke runs action through the reaction chain and returns its answer as an unstructured
// object (a reactor may answer with a typed one).
func (r *dynamicResource) invoke(action clienttesting.Action) (*unstructured.Unstructured, error) {
	obj, err := r.cs.Invokes(action, nil)
	if err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, fmt.Errorf("fakecluster: no object in the answer to %s %s", action.GetVerb(), gvrString(r.gvr))
	}
	return toUnstructured(obj)
}

// checkBody refuses an object holding a value JSON cannot (client-go's fake deep-copies the
// action first, and that copy panics on one): a BadRequest naming the field, as an API server
// answers a body it cannot decode.
func (r *dynamicResource) checkBody(obj *unstructured.Unstructured) error {
	if err := checkJSON(obj.Object, ""); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("%s %s: %v", gvrString(r.gvr), obj.GetName(), err))
	}
	return nil
}

func subresource(subresources []string) string {
	if len(subresources) == 0 {
		return ""
	}
	return subresources[0]
}

func (r *dynamicResource) Create(_ context.Context, obj *unstructured.Unstructured, opts metav1.CreateOptions, subresources ...string) (*unstructured.Unstructured, error) {
	if obj == nil {
		return nil, errors.New("fakecluster: Create of a nil object")
	}
	if err := r.checkBody(obj); err != nil {
		return nil, err
	}
	if sub := subresource(subresources); sub != "" {
		return r.invoke(clienttesting.NewCreateSubresourceActionWithOptions(r.gvr, obj.GetName(), sub, r.ns, obj, opts))
	}
	return r.invoke(clienttesting.NewCreateActionWithOptions(r.gvr, r.ns, obj, opts))
}

func (r *dynamicResource) Update(_ context.Context, obj *unstructured.Unstructured, opts metav1.UpdateOptions, subresources ...string) (*unstructured.Unstructured, error) {
	if obj == nil {
		return nil, errors.New("fakecluster: Update of a nil object")
	}
	if err := r.checkBody(obj); err != nil {
		return nil, err
	}
	if sub := subresource(subresources); sub != "" {
		return r.invoke(clienttesting.NewUpdateSubresourceActionWithOptions(r.gvr, sub, r.ns, obj, opts))
	}
	return r.invoke(clienttesting.NewUpdateActionWithOptions(r.gvr, r.ns, obj, opts))
}

func (r *dynamicResource) UpdateStatus(ctx context.Context, obj *unstructured.Unstructured, opts metav1.UpdateOptions) (*unstructured.Unstructured, error) {
	return r.Update(ctx, obj, opts, "status")
}

func (r *dynamicResource) Delete(_ context.Context, name string, opts metav1.DeleteOptions, subresources ...string) error {
	action := clienttesting.NewDeleteActionWithOptions(r.gvr, r.ns, name, opts)
	action.Subresource = subresource(subresources)
	_, err := r.cs.Invokes(action, nil)
	return err
}

func (r *dynamicResource) DeleteCollection(_ context.Context, opts metav1.DeleteOptions, listOpts metav1.ListOptions) error {
	_, err := r.cs.Invokes(clienttesting.NewDeleteCollectionActionWithOptions(r.gvr, r.ns, opts, listOpts), nil)
	return err
}

func (r *dynamicResource) Get(_ context.Context, name string, opts metav1.GetOptions, subresources ...string) (*unstructured.Unstructured, error) {
	if sub := subresource(subresources); sub != "" {
		return r.invoke(clienttesting.NewGetSubresourceActionWithOptions(r.gvr, r.ns, sub, name, opts))
	}
	return r.invoke(clienttesting.NewGetActionWithOptions(r.gvr, r.ns, name, opts))
}

func (r *dynamicResource) List(_ context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	// The kind of the action is only informative: the cluster knows the kind of what it serves.
	var kind schema.GroupVersionKind
	if ki, err := r.c.info(r.gvr); err == nil {
		kind = ki.gvk
	}
	obj, err := r.cs.Invokes(clienttesting.NewListActionWithOptions(r.gvr, kind, r.ns, opts), nil)
	if err != nil {
		return nil, err
	}
	return toUnstructuredList(obj, r.gvr)
}

// toUnstructuredList converts a list answer (typed or unstructured) to an UnstructuredList.
func toUnstructuredList(obj runtime.Object, gvr schema.GroupVersionResource) (*unstructured.UnstructuredList, error) {
	if obj == nil {
		return nil, fmt.Errorf("fakecluster: no list in the answer to list %s", gvrString(gvr))
	}
	if l, ok := obj.(*unstructured.UnstructuredList); ok {
		return l.DeepCopy(), nil
	}
	items, err := meta.ExtractList(obj)
	if err != nil {
		return nil, fmt.Errorf("fakecluster: answer to list %s: %w", gvrString(gvr), err)
	}
	out := &unstructured.UnstructuredList{Object: map[string]any{}}
	if gvk, err := kindOf(obj); err == nil {
		out.SetGroupVersionKind(gvk)
	}
	if lm, err := meta.ListAccessor(obj); err == nil {
		out.SetResourceVersion(lm.GetResourceVersion())
		out.SetContinue(lm.GetContinue())
		out.SetRemainingItemCount(lm.GetRemainingItemCount())
	}
	out.Items = make([]unstructured.Unstructured, 0, len(items))
	for _, item := range items {
		u, err := toUnstructured(item)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, *u)
	}
	return out, nil
}

func (r *dynamicResource) Watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	w, err := r.cs.InvokesWatch(clienttesting.NewWatchActionWithOptions(r.gvr, r.ns, opts))
	if err != nil {
		return nil, err
	}
	return newUnstructuredWatch(w), nil
}

func (r *dynamicResource) Patch(_ context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*unstructured.Unstructured, error) {
	return r.invoke(clienttesting.NewPatchSubresourceActionWithOptions(r.gvr, r.ns, name, pt, data, opts, subresources...))
}

func (r *dynamicResource) Apply(_ context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions, subresources ...string) (*unstructured.Unstructured, error) {
	if obj == nil {
		return nil, errors.New("fakecluster: Apply of a nil object")
	}
	// client-go's dynamic client refuses these before sending anything; so does this one.
	if name == "" {
		return nil, errors.New("name is required")
	}
	if len(obj.GetManagedFields()) > 0 {
		return nil, errors.New(`cannot apply an object with managed fields already set.
		Use the client-go/applyconfigurations "UnstructructuredExtractor" to obtain the unstructured ApplyConfiguration for the given field manager that you can use/modify here to apply`)
	}
	if err := r.checkBody(obj); err != nil {
		return nil, err
	}
	data, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	patchOpts := opts.ToPatchOptions()
	return r.invoke(clienttesting.NewPatchSubresourceActionWithOptions(r.gvr, r.ns, name, types.ApplyPatchType, data, patchOpts, subresources...))
}

func (r *dynamicResource) ApplyStatus(ctx context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions) (*unstructured.Unstructured, error) {
	return r.Apply(ctx, name, obj, opts, "status")
}
