package directinformer

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
)

// Dynamic returns the informer of gvr in namespace ns ("": all) over the
// dynamic client, listing with the options tweak sets (nil: none): what
// client-go's dynamicinformer builds. o's ListerWatcher, ObjectType and
// (when empty) Name and Indexers are set here.
func Dynamic(c dynamic.Interface, gvr schema.GroupVersionResource, ns string, tweak func(*metav1.ListOptions), o Options) *Informer {
	r := c.Resource(gvr).Namespace(ns)
	o.ObjectType = &unstructured.Unstructured{}
	return Resource(gvr, c, func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) { return r.List(ctx, opts) },
		r.Watch, tweak, o)
}

// Metadata is Dynamic over the metadata client: the informer caches
// PartialObjectMetadata.
func Metadata(c metadata.Interface, gvr schema.GroupVersionResource, ns string, tweak func(*metav1.ListOptions), o Options) *Informer {
	r := c.Resource(gvr).Namespace(ns)
	o.ObjectType = &metav1.PartialObjectMetadata{}
	return Resource(gvr, c, func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) { return r.List(ctx, opts) },
		r.Watch, tweak, o)
}

// Resource returns the informer of gvr that lists and watches through
// client's list and watch with the options tweak sets (nil: none), with
// watch-list semantics as client supports them. o's ListerWatcher is set
// here, and its Name and Indexers when empty (the resource, and the namespace
// index).
func Resource(gvr schema.GroupVersionResource, client any,
	list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error),
	tweak func(*metav1.ListOptions), o Options) *Informer {
	o.ListerWatcher = cache.ToListWatcherWithWatchListSemantics(listWatch(list, watchFn, tweak), client)
	if o.Name == "" {
		o.Name = gvr.GroupResource().String()
	}
	if o.Indexers == nil {
		o.Indexers = cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	}
	return New(o)
}

// listWatch calls list and watch with the options tweak sets.
func listWatch(list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error), tweak func(*metav1.ListOptions)) *cache.ListWatch {
	listCtx := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		if tweak != nil {
			tweak(&opts)
		}
		return list(ctx, opts)
	}
	watchCtx := func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		if tweak != nil {
			tweak(&opts)
		}
		return watchFn(ctx, opts)
	}
	return &cache.ListWatch{
		ListFunc:             func(opts metav1.ListOptions) (runtime.Object, error) { return listCtx(context.Background(), opts) },
		WatchFunc:            func(opts metav1.ListOptions) (watch.Interface, error) { return watchCtx(context.Background(), opts) },
		ListWithContextFunc:  listCtx,
		WatchFuncWithContext: watchCtx,
	}
}
