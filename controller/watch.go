package controller

import (
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/object"
	"github.com/ctrlkit/ctrlkit/internal/owner"
	"github.com/ctrlkit/ctrlkit/predicate"
	"github.com/ctrlkit/ctrlkit/provenance"
)

// Watch connects inf's events to c's queue: every add, update (both the old
// and the new object, so a changed mapping reaches the former and the current
// key) and delete is mapped by mapFn and the keys enqueued. Deletes seen only
// on relist arrive with the last known object, or a skeleton carrying just
// the namespace and name (informer.DeleteInfo). An object whose namespace left
// the informer's scope (informer.InNamespaceSet) was not deleted and enqueues
// nothing, though observers (WithObserver) and predicates see the event, with
// DeleteInfo.OutOfScope set. Objects that are not a T (a
// custom resource that failed conversion, a foreign tombstone) never reach
// mapFn or the queue: the informer reports them once with their key.
//
// The handler is registered when Run starts, and Run waits until it has seen
// inf's initial list; Run removes it when it returns. Call Watch before Run
// (after, it returns ErrAlreadyStarted). mapFn must not mutate the object,
// which is the cache's. For the common mappings use EnqueueObject and
// EnqueueControllerOf (or Owns, for the children a controller owns).
//
// Options filter the events: WithPredicates drops the events its predicates
// refuse before mapFn sees them (an update refused enqueues neither the old
// nor the new key). Without options no filter is added to the event path.
// A nil predicate is an error matching ErrInvalidOptions and
// predicate.ErrInvalidPredicate.
//
// Watch is a function, not a method, because Go methods cannot have type
// parameters.
func Watch[T informer.Object, K comparable](c *Controller[K], inf informer.Informer[T], mapFn func(T) []K, opts ...WatchOption[T]) error {
	return watch(c, inf, mapFn, true, opts...)
}

// watch is Watch; mapsOwn is false for Owns's, whose mapping never enqueues
// an object's own key.
func watch[T informer.Object, K comparable](c *Controller[K], inf informer.Informer[T], mapFn func(T) []K, mapsOwn bool, opts ...WatchOption[T]) error {
	if c == nil {
		return &OptionsError{Field: "Watch", Reason: "nil controller"}
	}
	if inf == nil || mapFn == nil {
		return &OptionsError{Controller: c.name, Field: "Watch", Reason: "nil informer or mapping function"}
	}
	cfg, err := configure(c, inf, opts)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ran {
		return fmt.Errorf("controller %q: watching %s: %w", c.name, inf.Name(), ErrAlreadyStarted)
	}
	if cfg.resyncPeriod < 0 {
		return fmt.Errorf("controller %q: watching %s: %w: resync period %v is negative", c.name, inf.Name(), ErrInvalidOptions, cfg.resyncPeriod)
	}
	w := watchOf(c, inf)
	w.handlers = append(w.handlers, handlerOf(cfg, inf, mapFn))
	w.periods = append(w.periods, cfg.resyncPeriod)
	if mapsOwn {
		w.mapsOwn++
	}
	return nil
}

// configure applies a Watch's options and checks their predicates.
func configure[T informer.Object, K comparable](c *Controller[K], inf informer.Informer[T], opts []WatchOption[T]) (watchConfig[T], error) {
	var cfg watchConfig[T]
	for _, o := range opts {
		if o != nil {
			o.applyToWatch(&cfg)
		}
	}
	for i, p := range cfg.predicates {
		if err := predicate.Validate(p); err != nil {
			return cfg, fmt.Errorf("controller %q: watching %s: %w: predicate %d: %w", c.name, inf.Name(), ErrInvalidOptions, i, err)
		}
	}
	return cfg, nil
}

// handlerOf builds, for each Run's queue, the handler of one Watch of inf.
func handlerOf[T informer.Object, K comparable](cfg watchConfig[T], inf informer.Informer[T], mapFn func(T) []K) func(q queue[K], provenance bool) informer.Handler[T] {
	return func(q queue[K], provenance bool) informer.Handler[T] {
		h := enqueueMapped(q, mapFn, inf.Name(), provenance)
		h.initial, h.resync = cfg.initialPriority, cfg.resyncPriority
		return watchHandler(cfg.observers, h, cfg.predicates)
	}
}

// WithResyncPeriod makes this Watch see every cached object again every d,
// as a resync update (old and new the same object, informer.IsResync true;
// provenance.TriggerResync in provenance; at WithResyncPriority's priority), whatever the
// factory's resync period (informer.Options.Resync) and without touching the
// informer's other handlers: a periodic check of one controller's objects
// (an external system that drifts) costs the others nothing. Predicates apply:
// one that drops resyncs (predicate.ResourceVersionChanged, which Owns adds)
// drops these too. The first pass comes d after the caches synced. 0, the
// default, means none; negative is an error. It is controller-runtime's
// per-object SyncPeriod, per Watch.
func WithResyncPeriod[T informer.Object](d time.Duration) WatchOption[T] {
	return resyncPeriodOption[T](d)
}

type resyncPeriodOption[T informer.Object] time.Duration

func (o resyncPeriodOption[T]) applyToWatch(cfg *watchConfig[T]) { cfg.resyncPeriod = time.Duration(o) }

// EnqueueObject maps an object to its own Key: the usual mapping for the
// controller's primary resource.
//
//	controller.Watch(c, replicaSets, controller.EnqueueObject)
func EnqueueObject[T informer.Object](obj T) []Key {
	return []Key{KeyFromObject(obj)}
}

// Owns watches the objects a controller creates and owns: events of inf's
// objects enqueue the Key of their controlling owner when it is one of
// owners' objects (normally the controller's primary informer), and resync updates are
// dropped (the owner's own watch resyncs the owner; kube-controller-manager's
// controllers likewise ignore same-resourceVersion updates of their Pods). It
// is Watch with the mapping EnqueueControllerOf[T](owners), except for owners
// missing from the cache (below), and the option
// WithPredicates(predicate.ResourceVersionChanged[T]()) ahead of opts, which
// add predicates of their own. The name is controller-runtime's builder.Owns.
//
// An owner missing from owners' synced cache enqueues nothing when another
// Watch of c watches owners (For, in controller-runtime's words): the
// owner's add is still to come and enqueues it, or the owner is gone. When
// none does, nothing else would reach the owner, so its key is enqueued: the
// one key its scope allows, or, for a custom resource of which the cache has
// shown no object yet (the first one created), both "namespace/name" and
// "name", one of which names nothing.
//
// Every scope and kind of owner works: a namespaced owner enqueues
// "namespace/name", a cluster-scoped one (a Tenant owning Namespaces and the
// RoleBindings in them) its name alone; owners may be typed, unstructured or
// metadata-only, built-in or custom (see EnqueueControllerOf). A wiring that
// cannot work, cluster-scoped children of a namespaced owner, is an error
// matching ErrInvalidOptions: from Owns when client-go serves both
// resources, else from Run once the caches synced and a cached child shows
// it (Watch does not call the API server, which alone knows a custom
// resource's scope), and logged as an error for the first such child seen
// later.
// Objects whose resourceVersion never changes (client-go's plain fake
// clientset keeps the one a test gave) have every update dropped; ctrlkit's
// fake cluster stamps a new one on each write.
//
//	controller.Owns(c, pods, replicaSets)
func Owns[T, O informer.Object](c *Controller[Key], inf informer.Informer[T], owners informer.Informer[O], opts ...WatchOption[T]) error {
	name := ""
	if c != nil {
		name = c.name
	}
	if object.IsNil(owners) || object.IsNil(inf) {
		return &OptionsError{Controller: name, Field: "Owns", Reason: "nil informer"}
	}
	if err := checkOwnerScopes(inf.GVR(), owners.GVR()); err != nil {
		return &OptionsError{Controller: name, Field: "Owns", Reason: err.Error()}
	}
	report := func(err error) {
		logger := klog.Background()
		if c != nil && c.logger.GetSink() != nil {
			logger = c.logger
		}
		logger.Error(err, "Cannot map an object to its owner", "controller", name, "informer", inf.Name())
	}
	// An owner missing from the synced cache is gone, or its add is still to
	// come and enqueues it: only when c watches owners. Else the child's
	// event is all that reaches the owner (an owner created just before its
	// child can reach the owners' cache after the child's event), and its
	// key is enqueued.
	var watchesOwners atomic.Int32 // 0 not known yet, 1 yes, 2 no
	complete := func() bool {
		switch watchesOwners.Load() {
		case 1:
			return owners.HasSynced()
		case 2:
			return false
		}
		c.mu.Lock()
		ran, yes := c.ran, c.watchesOwnKeys(informerID(owners))
		c.mu.Unlock()
		if ran { // the watches are fixed from Run on
			if yes {
				watchesOwners.Store(1)
			} else {
				watchesOwners.Store(2)
			}
		}
		return yes && owners.HasSynced()
	}
	mapping, r := controllerOf[T](owners, complete, report)
	all := make([]WatchOption[T], 0, len(opts)+1)
	all = append(all, WithPredicates(predicate.ResourceVersionChanged[T]()))
	if err := watch(c, inf, mapping, false, append(all, opts...)...); err != nil {
		return err
	}
	if _, known := owner.CheckScopes(inf.GVR(), owners.GVR()); !known {
		// A custom resource's scope is the API server's to tell, and Watch
		// does not call it: the objects cached when Run starts tell instead.
		c.mu.Lock()
		c.checks = append(c.checks, func() error {
			children, err := inf.Lister().List(labels.Everything())
			if err != nil {
				return nil // the informer reports its own errors; this is only a check
			}
			for _, child := range children {
				if r.Unresolvable(child) {
					return &OptionsError{Controller: name, Field: "Owns", Reason: fmt.Sprintf("%s: %v", inf.GVR().GroupResource(), unresolvableError(child, owners))}
				}
			}
			return nil
		})
		c.mu.Unlock()
	}
	return nil
}

// WatchOption configures one Watch or Owns call. It is typed on the watched
// object, so an option for another type is a compile error.
type WatchOption[T informer.Object] interface {
	applyToWatch(*watchConfig[T])
}

// watchConfig is what the options of one Watch set.
type watchConfig[T informer.Object] struct {
	predicates      []predicate.Predicate[T]
	observers       []informer.Handler[T]
	initialPriority *int          // WithInitialListPriority
	resyncPriority  *int          // WithResyncPriority
	resyncPeriod    time.Duration // WithResyncPeriod
}

// WithInitialListPriority queues the keys of the watch's initial list (the
// adds an informer replays when the controller starts) at priority p instead
// of 0, the default. A negative p lets the events of a running cluster
// overtake a start-up's backlog: controller-runtime's priority queue does so
// by default (at -100), which can delay a key of the list for as long as
// events keep coming; here it is a choice. An event for a key already
// queued raises it to that event's priority.
func WithInitialListPriority[T informer.Object](p int) WatchOption[T] {
	return priorityOption[T]{initial: true, p: p}
}

// WithResyncPriority queues the keys of resync updates (informer.IsResync:
// the periodic replay of every cached object, Options.Resync of the factory) at
// priority p instead of 0.
func WithResyncPriority[T informer.Object](p int) WatchOption[T] {
	return priorityOption[T]{p: p}
}

type priorityOption[T informer.Object] struct {
	initial bool
	p       int
}

func (o priorityOption[T]) applyToWatch(cfg *watchConfig[T]) {
	p := o.p
	if o.initial {
		cfg.initialPriority = &p
	} else {
		cfg.resyncPriority = &p
	}
}

// WithPredicates filters a watch's events: an event reaches the mapping only
// when every predicate passes it (several WithPredicates add up, as in
// controller-runtime's builder). T is inferred from the predicates.
//
//	controller.Watch(c, deployments, controller.EnqueueObject,
//		controller.WithPredicates(predicate.GenerationChanged[*appsv1.Deployment]()))
func WithPredicates[T informer.Object](ps ...predicate.Predicate[T]) WatchOption[T] {
	return predicatesOption[T](ps)
}

type predicatesOption[T informer.Object] []predicate.Predicate[T]

func (p predicatesOption[T]) applyToWatch(cfg *watchConfig[T]) {
	cfg.predicates = append(cfg.predicates, p...)
}

// watchHandler is the handler of one Watch: its observers, then the mapping,
// behind the predicates when there are any. Without options it is the bare
// mapping, so an unfiltered watch costs nothing extra per event.
func watchHandler[T informer.Object](observers []informer.Handler[T], h informer.Handler[T], ps []predicate.Predicate[T]) informer.Handler[T] {
	if len(observers) > 0 {
		h = append(fanout[T](slices.Clone(observers)), h)
	}
	switch len(ps) {
	case 0:
		return h
	case 1:
		return filtered[T]{p: ps[0], h: h}
	default:
		return filtered[T]{p: predicate.And(ps...), h: h}
	}
}

// filtered passes to h only the events p passes. Filtering before the
// mapping is what makes a refused update enqueue neither of its keys.
type filtered[T informer.Object] struct {
	p predicate.Predicate[T]
	h informer.Handler[T]
}

func (f filtered[T]) HandleAdd(obj T, isInitialList bool) {
	if f.p.Create(predicate.CreateEvent[T]{Object: obj, IsInInitialList: isInitialList}) {
		f.h.HandleAdd(obj, isInitialList)
	}
}

func (f filtered[T]) HandleUpdate(oldObj, newObj T) {
	if f.p.Update(predicate.UpdateEvent[T]{ObjectOld: oldObj, ObjectNew: newObj}) {
		f.h.HandleUpdate(oldObj, newObj)
	}
}

func (f filtered[T]) HandleDelete(obj T, info informer.DeleteInfo) {
	if f.p.Delete(predicate.DeleteEvent[T]{Object: obj, DeleteInfo: info}) {
		f.h.HandleDelete(obj, info)
	}
}

// WithObserver runs o on every event of the watch that passes its
// predicates, in the same handler and before the mapping enqueues the keys.
// It is for bookkeeping that must be done before a Reconcile of the key can
// look at it: kube-controller-manager's expectations (see ObserveChildren).
// With two handlers (a Watch to enqueue, another to observe) the Reconcile
// could run between them, find the expectation unmet, do nothing, and never
// be woken again. Several observers run in the order given. o must not
// mutate the object, which is the cache's.
func WithObserver[T informer.Object](o informer.Handler[T]) WatchOption[T] {
	return observerOption[T]{o}
}

type observerOption[T informer.Object] struct{ o informer.Handler[T] }

func (o observerOption[T]) applyToWatch(cfg *watchConfig[T]) {
	cfg.observers = append(cfg.observers, o.o)
}

// enqueueMapped is the mapping of one Watch: each event's object mapped to
// keys, added to q; with provenance, each key with the event as its
// trigger. An update reaches both the new and the old object's keys.
func enqueueMapped[T informer.Object, K comparable](q queue[K], fn func(T) []K, source string, provenance bool) *mappedHandler[T, K] {
	return &mappedHandler[T, K]{q: q, fn: fn, source: source, provenance: provenance}
}

type mappedHandler[T informer.Object, K comparable] struct {
	q          queue[K]
	fn         func(T) []K
	source     string
	provenance bool
	// initial and resync are the priorities of the initial list's adds and
	// of resync updates (WithInitialListPriority, WithResyncPriority); nil
	// is the default.
	initial, resync *int
}

// spec is how an event on obj adds its keys: with the event as the trigger
// when the controller has provenance, else plainly (no trigger is built).
func (h *mappedHandler[T, K]) spec(ev provenance.EventType, obj T) addSpec {
	if !h.provenance {
		return addSpec{}
	}
	return addSpec{trigger: provenance.EventTrigger(h.source, ev, obj)}
}

func (h *mappedHandler[T, K]) HandleAdd(obj T, isInitialList bool) {
	a := h.spec(provenance.EventAdd, obj)
	if isInitialList {
		a.priority = h.initial
	}
	for _, k := range h.fn(obj) {
		h.q.add(k, a)
	}
}

func (h *mappedHandler[T, K]) HandleUpdate(oldObj, newObj T) {
	a := h.spec(provenance.EventUpdate, newObj)
	if (h.provenance || h.resync != nil) && informer.IsResync(oldObj, newObj) {
		if h.provenance {
			a.trigger.Kind = provenance.TriggerResync
		}
		a.priority = h.resync
	}
	keys := h.fn(newObj)
	for _, k := range keys {
		h.q.add(k, a)
	}
	for _, k := range h.fn(oldObj) {
		if !slices.Contains(keys, k) {
			h.q.add(k, a)
		}
	}
}

// HandleDelete enqueues the keys of a deleted object. An object that only left
// the informer's scope (its namespace was removed from an informer.NamespaceSet)
// was not deleted: its Reconcile would find it missing from the cache and act
// as if it were gone, so nothing is enqueued (observers and predicates, ahead of
// the mapping, still see the event).
func (h *mappedHandler[T, K]) HandleDelete(obj T, info informer.DeleteInfo) {
	if info.OutOfScope {
		return
	}
	a := h.spec(provenance.EventDelete, obj)
	for _, k := range h.fn(obj) {
		h.q.add(k, a)
	}
}
