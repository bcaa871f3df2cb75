package controller

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
)

// Watch connects inf's events to c's queue: every add, update (both the old
// and the new object, so a changed mapping reaches the former and the current
// key) and delete is mapped by mapFn and the keys enqueued. Deletes seen only
// on relist arrive with the last known object, or a skeleton carrying just
// the namespace and name (informer.DeleteInfo). Objects that are not a T (a
// custom resource that failed conversion, a foreign tombstone) never reach
// mapFn or the queue: the informer reports them once with their key.
//
// The handler is registered when Run starts, and Run waits until it has seen
// inf's initial list; Run removes it when it returns. Call Watch before Run
// (after, it returns ErrAlreadyStarted). mapFn must not mutate the object,
// which is the cache's. For the common mappings use EnqueueObject and
// EnqueueControllerOf.
//
// Watch is a function, not a method, because Go methods cannot have type
// parameters.
func Watch[T informer.Object, K comparable](c *Controller[K], inf informer.Informer[T], mapFn func(T) []K) error {
	if c == nil {
		return &OptionsError{Field: "Watch", Reason: "nil controller"}
	}
	if inf == nil || mapFn == nil {
		return &OptionsError{Controller: c.name, Field: "Watch", Reason: "nil informer or mapping function"}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ran {
		return fmt.Errorf("controller %q: watching %s: %w", c.name, inf.Name(), ErrAlreadyStarted)
	}
	c.watches = append(c.watches, watch[K]{
		name: inf.Name(),
		register: func(q *runQueue[K]) (registration, error) {
			reg, err := inf.AddHandler(informer.EnqueueMapped(informer.Adder[K](q), mapFn))
			if err != nil {
				return registration{}, err
			}
			return registration{name: inf.Name(), reg: reg, remove: func() error { return inf.RemoveHandler(reg) }}, nil
		},
	})
	return nil
}

// EnqueueObject maps an object to its own Key: the usual mapping for the
// controller's primary resource.
//
//	controller.Watch(c, replicaSets, controller.EnqueueObject)
func EnqueueObject[T informer.Object](obj T) []Key {
	return []Key{KeyFromObject(obj)}
}

// EnqueueControllerOf returns a mapping of an object to the Key of its
// controlling owner when that owner is of owner's group and kind (any
// version: owner references name whatever version the owner was created
// with), and to nothing otherwise: the usual mapping for the children a
// controller creates (Pods of a ReplicaSet). An update whose controller
// reference changed reaches both the old and the new owner. The owner is
// looked up in the child's namespace, as owner references require; for
// cluster-scoped owners of namespaced children write the mapping yourself.
//
//	controller.Watch(c, pods, controller.EnqueueControllerOf[*corev1.Pod](appsv1.SchemeGroupVersion.WithKind("ReplicaSet")))
func EnqueueControllerOf[T informer.Object](owner schema.GroupVersionKind) func(T) []Key {
	return func(obj T) []Key {
		name, ok := informer.ControllerOf(obj, owner)
		if !ok {
			return nil
		}
		return []Key{{Namespace: name.Namespace, Name: name.Name}}
	}
}

// WaitFor makes Run wait until hasSynced reports true before starting the
// workers, as for a watched informer; use it for caches the controller reads
// but does not watch (a lister of another resource).
func (c *Controller[K]) WaitFor(name string, hasSynced func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, syncFunc{name: name, fn: hasSynced})
}

// watch is one Watch call, registered when Run starts.
type watch[K comparable] struct {
	name     string
	register func(q *runQueue[K]) (registration, error)
}

// source is something Run waits for: a handler registration or a WaitFor
// function, named for the sync error.
type source interface {
	Name() string
	HasSynced() bool
}

// registration waits on a handler registration: synced once the handler has
// seen the informer's initial list, which is later than the informer itself.
type registration struct {
	name   string
	reg    cache.ResourceEventHandlerRegistration
	remove func() error
}

func (r registration) Name() string    { return r.name }
func (r registration) HasSynced() bool { return r.reg.HasSynced() }

// HasSyncedChecker lets informer.WaitForCacheSync wait without polling.
func (r registration) HasSyncedChecker() cache.DoneChecker { return r.reg.HasSyncedChecker() }

type syncFunc struct {
	name string
	fn   func() bool
}

func (s syncFunc) Name() string    { return s.name }
func (s syncFunc) HasSynced() bool { return s.fn() }

// HasSynced reports whether Run has started and every watched source has
// delivered its initial list to this controller. A manager.Manager reports
// it in /readyz.
func (c *Controller[K]) HasSynced() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.registered {
		return false
	}
	for _, s := range c.sources {
		if !s.HasSynced() {
			return false
		}
	}
	return true
}
