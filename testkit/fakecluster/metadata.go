package fakecluster

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

// Metadata is the metadata front end (client-go's metadata.Interface, what
// informer.ForMetadata and metadata-only controllers use) over the same store:
// every request is the dynamic front end's, with the answer cut to
// metav1.PartialObjectMetadata as kube-apiserver does for a metadata client
// (apiVersion and kind of the object's resource, metadata alone). Its requests
// go through Clientset's reaction chain, so faults and recorded actions see
// them.
func (c *Cluster) Metadata() metadata.Interface { return metadataClient{d: c.dynamic} }

type metadataClient struct{ d dynamic.Interface }

var _ metadata.Interface = metadataClient{}

func (m metadataClient) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	return metadataResource{ri: m.d.Resource(gvr), nri: m.d.Resource(gvr)}
}

// IsWatchListSemanticsUnSupported tells client-go's reflector that the cluster's watches do not
// stream the initial list, as the dynamic front end says too.
func (m metadataClient) IsWatchListSemanticsUnSupported() bool { return true }

type metadataResource struct {
	ri  dynamic.ResourceInterface
	nri dynamic.NamespaceableResourceInterface
}

func (r metadataResource) Namespace(ns string) metadata.ResourceInterface {
	return metadataResource{ri: r.nri.Namespace(ns), nri: r.nri}
}

func partial(u *unstructured.Unstructured) (*metav1.PartialObjectMetadata, error) {
	p := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()}}
	md, _ := u.Object["metadata"].(map[string]any)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(md, &p.ObjectMeta); err != nil {
		return nil, fmt.Errorf("fakecluster: metadata of %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return p, nil
}

func (r metadataResource) Delete(ctx context.Context, name string, o metav1.DeleteOptions, sub ...string) error {
	return r.ri.Delete(ctx, name, o, sub...)
}

func (r metadataResource) DeleteCollection(ctx context.Context, o metav1.DeleteOptions, lo metav1.ListOptions) error {
	return r.ri.DeleteCollection(ctx, o, lo)
}

func (r metadataResource) Get(ctx context.Context, name string, o metav1.GetOptions, sub ...string) (*metav1.PartialObjectMetadata, error) {
	u, err := r.ri.Get(ctx, name, o, sub...)
	if err != nil {
		return nil, err
	}
	return partial(u)
}

func (r metadataResource) List(ctx context.Context, o metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	ul, err := r.ri.List(ctx, o)
	if err != nil {
		return nil, err
	}
	out := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: ul.GetResourceVersion(), Continue: ul.GetContinue()}}
	out.Items = make([]metav1.PartialObjectMetadata, 0, len(ul.Items))
	for i := range ul.Items {
		p, err := partial(&ul.Items[i])
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, *p)
	}
	return out, nil
}

func (r metadataResource) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, o metav1.PatchOptions, sub ...string) (*metav1.PartialObjectMetadata, error) {
	u, err := r.ri.Patch(ctx, name, pt, data, o, sub...)
	if err != nil {
		return nil, err
	}
	return partial(u)
}

func (r metadataResource) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := r.ri.Watch(ctx, o)
	if err != nil {
		return nil, err
	}
	pw := &partialWatch{in: w, out: make(chan watch.Event), done: make(chan struct{})}
	go pw.relay()
	return pw, nil
}

// partialWatch relays a dynamic watch's events as metadata. Unlike watch.Filter, whose relay
// blocks for ever on an event nobody reads after Stop, it ends when stopped.
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
			if p, err := partial(u); err == nil {
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
