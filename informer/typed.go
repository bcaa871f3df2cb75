package informer

import (
	"context"
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/kubernetes"
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
	client    kubernetes.Interface
	resync    time.Duration
	transform cache.TransformFunc // nil: none
	name      *cache.InformerName // nil: no metrics identity

	mu        sync.Mutex
	informers map[reflect.Type]cache.SharedIndexInformer
	started   map[reflect.Type]bool
	// shutdown is set by Shutdown, which then waits for running.
	shutdown bool
	running  sync.WaitGroup
}

func newTypedInformers(client kubernetes.Interface, resync time.Duration, transform cache.TransformFunc, name *cache.InformerName) *typedInformers {
	return &typedInformers{
		client:    client,
		resync:    resync,
		transform: transform,
		name:      name,
		informers: map[reflect.Type]cache.SharedIndexInformer{},
		started:   map[reflect.Type]bool{},
	}
}

// InformerFor returns the informer of obj's type, built by newFunc the first
// time (with the transform set).
func (s *typedInformers) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := reflect.TypeOf(obj)
	if inf, ok := s.informers[t]; ok {
		return inf
	}
	inf := newFunc(s.client, s.resync)
	if s.transform != nil {
		// A new informer has not started: this cannot fail.
		_ = inf.SetTransform(s.transform)
	}
	s.informers[t] = inf
	return inf
}

// InformerName is the metrics identity of the informers (nil: none).
func (s *typedInformers) InformerName() *cache.InformerName { return s.name }

// Start runs the informers not yet running until stopCh is closed.
func (s *typedInformers) Start(stopCh <-chan struct{}) {
	s.StartWithContext(wait.ContextForChannel(stopCh))
}

// StartWithContext runs the informers not yet running until ctx ends.
func (s *typedInformers) StartWithContext(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutdown {
		return
	}
	for t, inf := range s.informers {
		if !s.started[t] {
			s.started[t] = true
			s.running.Go(func() { inf.RunWithContext(ctx) })
		}
	}
}

// Shutdown waits for the informers to stop (their context must end) and
// releases the metrics name. Start does nothing after it.
func (s *typedInformers) Shutdown() {
	s.mu.Lock()
	s.shutdown = true
	s.mu.Unlock()
	s.running.Wait()
	s.name.Release()
}

// WaitForCacheSyncWithContext waits until every started informer synced or
// ctx ends, and says which did.
func (s *typedInformers) WaitForCacheSyncWithContext(ctx context.Context) cache.SyncResult {
	s.mu.Lock()
	started := make(map[reflect.Type]cache.SharedIndexInformer, len(s.started))
	for t := range s.started {
		started[t] = s.informers[t]
	}
	s.mu.Unlock()
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
