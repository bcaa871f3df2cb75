package informer

import (
	"context"
	"reflect"
	"sync"
	"time"

	"github.com/ctrlkit/ctrlkit/internal/directinformer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
)

// typedInformers holds informers of built-in types, one per Go type, started
// and shut down together, as client-go's informers.SharedInformerFactory
// keeps them. Their namespace and list options are the builder's (the
// newFunc given to InformerFor).
//
// It is the factory's own rather than client-go's because a program that
// calls informers.NewSharedInformerFactory links the type descriptors of
// every generated informer, lister and apply configuration (see
// docs/performance.md, binary size). Factory.SharedInformerFactory puts
// client-go's generated informers on top of it, for the programs that use
// them.
type typedInformers struct {
	informerSet[reflect.Type]
	client    kubernetes.Interface
	resync    time.Duration
	transform cache.TransformFunc // nil: none
	name      *cache.InformerName // nil: no metrics identity
}

func newTypedInformers(client kubernetes.Interface, resync time.Duration, transform cache.TransformFunc, name *cache.InformerName) *typedInformers {
	return &typedInformers{client: client, resync: resync, transform: transform, name: name}
}

// InformerFor returns the informer of obj's type, built by newFunc the first
// time (with the transform set).
func (s *typedInformers) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	return s.informer(reflect.TypeOf(obj), func() cache.SharedIndexInformer {
		inf := newFunc(s.client, s.resync)
		if s.transform != nil {
			// A new informer has not started: this cannot fail.
			_ = inf.SetTransform(s.transform)
		}
		return inf
	})
}

// InformerName is the metrics identity of the informers (nil: none).
func (s *typedInformers) InformerName() *cache.InformerName { return s.name }

// Shutdown waits for the informers to stop (their context must end) and
// releases the metrics name. Start does nothing after it.
func (s *typedInformers) Shutdown() {
	s.informerSet.Shutdown()
	s.name.Release()
}

// WaitForCacheSyncWithContext waits until every started informer synced or
// ctx ends, and says which did.
func (s *typedInformers) WaitForCacheSyncWithContext(ctx context.Context) cache.SyncResult {
	started := s.runningInformers()
	checks := make([]cache.DoneChecker, 0, len(started))
	for _, inf := range started {
		checks = append(checks, inf.HasSyncedChecker())
	}
	cache.WaitFor(ctx, "", checks...)
	res := cache.SyncResult{Synced: make(map[reflect.Type]bool, len(started))}
	for t, inf := range started {
		res.Synced[t] = inf.HasSynced()
		if !res.Synced[t] {
			res.Err = context.Cause(ctx)
		}
	}
	return res
}

// WaitForCacheSync is WaitForCacheSyncWithContext until stopCh is closed.
func (s *typedInformers) WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool {
	return s.WaitForCacheSyncWithContext(wait.ContextForChannel(stopCh)).Synced
}

// resourceInformers holds the dynamic or metadata informers of one namespace
// and list options, one per resource, as client-go's dynamicinformer and
// metadatainformer factories do.
type resourceInformers struct {
	informerSet[schema.GroupVersionResource]
	build func(schema.GroupVersionResource) cache.SharedIndexInformer
}

// Informer returns the informer of gvr, built the first time.
func (s *resourceInformers) Informer(gvr schema.GroupVersionResource) cache.SharedIndexInformer {
	return s.informer(gvr, func() cache.SharedIndexInformer { return s.build(gvr) })
}

func newDynamicInformers(c dynamic.Interface, ns string, tweak func(*metav1.ListOptions), resync time.Duration) *resourceInformers {
	return &resourceInformers{build: func(gvr schema.GroupVersionResource) cache.SharedIndexInformer {
		return directinformer.Dynamic(c, gvr, ns, tweak, directinformer.Options{ResyncPeriod: resync})
	}}
}

func newMetadataInformers(c metadata.Interface, ns string, tweak func(*metav1.ListOptions), resync time.Duration) *resourceInformers {
	return &resourceInformers{build: func(gvr schema.GroupVersionResource) cache.SharedIndexInformer {
		return directinformer.Metadata(c, gvr, ns, tweak, directinformer.Options{ResyncPeriod: resync})
	}}
}

// informerSet holds informers by key, runs the ones not yet running on each
// Start, and waits for them on Shutdown.
type informerSet[K comparable] struct {
	mu        sync.Mutex
	informers map[K]cache.SharedIndexInformer
	started   map[K]bool
	// shutdown is set by Shutdown, which then waits for running.
	shutdown bool
	running  sync.WaitGroup
}

// informer returns the informer of k, built by build the first time.
func (s *informerSet[K]) informer(k K, build func() cache.SharedIndexInformer) cache.SharedIndexInformer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if inf, ok := s.informers[k]; ok {
		return inf
	}
	if s.informers == nil {
		s.informers, s.started = map[K]cache.SharedIndexInformer{}, map[K]bool{}
	}
	inf := build()
	s.informers[k] = inf
	return inf
}

// Start runs the informers not yet running until stopCh is closed.
func (s *informerSet[K]) Start(stopCh <-chan struct{}) {
	s.StartWithContext(wait.ContextForChannel(stopCh))
}

// StartWithContext runs the informers not yet running until ctx ends.
func (s *informerSet[K]) StartWithContext(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutdown {
		return
	}
	for k, inf := range s.informers {
		if !s.started[k] {
			s.started[k] = true
			s.running.Go(func() { inf.RunWithContext(ctx) })
		}
	}
}

// Shutdown waits for the informers to stop (their context must end). Start
// does nothing after it.
func (s *informerSet[K]) Shutdown() {
	s.mu.Lock()
	s.shutdown = true
	s.mu.Unlock()
	s.running.Wait()
}

// runningInformers are the informers Start ran.
func (s *informerSet[K]) runningInformers() map[K]cache.SharedIndexInformer {
	s.mu.Lock()
	defer s.mu.Unlock()
	started := make(map[K]cache.SharedIndexInformer, len(s.started))
	for k := range s.started {
		started[k] = s.informers[k]
	}
	return started
}
