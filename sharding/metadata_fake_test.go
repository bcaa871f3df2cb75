package sharding_test

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
)

// dynamicMetadata serves client-go's metadata interface from a dynamic
// client, so the fake cluster (which has typed and dynamic front ends) can
// back metadata informers and metadata patches. lostReplies, when set,
// decides per patch whether the reply is lost: the patch is applied and an
// error returned, as when a connection drops after the server wrote.
type dynamicMetadata struct {
	d dynamic.Interface

	mu          sync.Mutex
	lostReplies func(gvr schema.GroupVersionResource, name string) bool
	lost        int
}

var _ metadata.Interface = (*dynamicMetadata)(nil)

func (m *dynamicMetadata) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	return &dynamicMetadataResource{m: m, gvr: gvr, ri: m.d.Resource(gvr)}
}

func (m *dynamicMetadata) loseReply(gvr schema.GroupVersionResource, name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lostReplies != nil && m.lostReplies(gvr, name) {
		m.lost++
		return true
	}
	return false
}

func (m *dynamicMetadata) lostCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lost
}

type dynamicMetadataResource struct {
	m   *dynamicMetadata
	gvr schema.GroupVersionResource
	ri  dynamic.ResourceInterface
}

func (r *dynamicMetadataResource) Namespace(ns string) metadata.ResourceInterface {
	return &dynamicMetadataResource{m: r.m, gvr: r.gvr, ri: r.m.d.Resource(r.gvr).Namespace(ns)}
}

func toPartial(u *unstructured.Unstructured) (*metav1.PartialObjectMetadata, error) {
	p := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()}}
	md, _ := u.Object["metadata"].(map[string]any)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(md, &p.ObjectMeta); err != nil {
		return nil, err
	}
	return p, nil
}

func (r *dynamicMetadataResource) Delete(ctx context.Context, name string, o metav1.DeleteOptions, sub ...string) error {
	return r.ri.Delete(ctx, name, o, sub...)
}

func (r *dynamicMetadataResource) DeleteCollection(ctx context.Context, o metav1.DeleteOptions, lo metav1.ListOptions) error {
	return r.ri.DeleteCollection(ctx, o, lo)
}

func (r *dynamicMetadataResource) Get(ctx context.Context, name string, o metav1.GetOptions, sub ...string) (*metav1.PartialObjectMetadata, error) {
	u, err := r.ri.Get(ctx, name, o, sub...)
	if err != nil {
		return nil, err
	}
	return toPartial(u)
}

func (r *dynamicMetadataResource) List(ctx context.Context, o metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	ul, err := r.ri.List(ctx, o)
	if err != nil {
		return nil, err
	}
	out := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: ul.GetResourceVersion()}}
	for i := range ul.Items {
		p, err := toPartial(&ul.Items[i])
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, *p)
	}
	return out, nil
}

func (r *dynamicMetadataResource) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := r.ri.Watch(ctx, o)
	if err != nil {
		return nil, err
	}
	pw := &partialWatch{in: w, out: make(chan watch.Event), done: make(chan struct{})}
	go pw.relay()
	return pw, nil
}

// partialWatch relays a dynamic watch's events as metadata. Unlike
// watch.Filter, whose relay blocks for ever on an event nobody reads after
// Stop, it ends when stopped.
type partialWatch struct {
	in       watch.Interface
	out      chan watch.Event
	done     chan struct{}
	stopOnce sync.Once
}

func (w *partialWatch) relay() {
	defer close(w.out)
	for e := range w.in.ResultChan() {
		if u, ok := e.Object.(*unstructured.Unstructured); ok {
			if p, err := toPartial(u); err == nil {
				e.Object = p
			}
		}
		select {
		case w.out <- e:
		case <-w.done:
			return
		}
	}
}

func (w *partialWatch) Stop() {
	w.stopOnce.Do(func() {
		close(w.done)
		w.in.Stop()
	})
}

func (w *partialWatch) ResultChan() <-chan watch.Event { return w.out }

func (r *dynamicMetadataResource) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, o metav1.PatchOptions, sub ...string) (*metav1.PartialObjectMetadata, error) {
	u, err := r.ri.Patch(ctx, name, pt, data, o, sub...)
	if err != nil {
		return nil, err
	}
	if r.m.loseReply(r.gvr, name) {
		return nil, fmt.Errorf("reply to the patch of %s %s lost", r.gvr.Resource, name)
	}
	return toPartial(u)
}

// IsWatchListSemanticsUnSupported tells client-go's reflector that the fake
// cluster's watches do not stream the initial list, as the dynamic client
// underneath says too.
func (m *dynamicMetadata) IsWatchListSemanticsUnSupported() bool { return true }
