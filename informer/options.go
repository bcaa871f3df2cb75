package informer

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	"k8s.io/client-go/tools/record"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// Options configure a Factory: one value a reader sees whole, in place of
// a list of functional options. The zero value is a factory with every
// default: informers watch all namespaces, never resync, strip
// managedFields, share equal sub-objects, account their memory and report
// problems through utilruntime.HandleErrorWithContext.
type Options struct {
	// Namespace limits every namespaced informer of the factory to one
	// namespace. "" (metav1.NamespaceAll) watches all namespaces.
	Namespace string

	// TweakListOptions narrows every list and watch the factory issues,
	// typically with a label or field selector. Listers then only see what
	// matched.
	TweakListOptions func(*metav1.ListOptions)

	// Resync is the resync period of every informer; 0 means no periodic
	// resync. Resync re-delivers every cached object as an update whose old
	// and new objects share a resourceVersion; see IsResync and
	// HandlerFuncs.SkipResync.
	Resync time.Duration

	// Scheme names the kinds of the Go types registered in it, for
	// informers of custom resources (ForResource) whose kind cannot be told
	// from the type's name: Owns and the mappings keyed on an owner's kind
	// need it. Most need none: a Go type named after its kind (PodSet,
	// served as podsets) is recognised. client-go's scheme is always
	// consulted after this one. A manager.Manager passes its Options.Scheme.
	Scheme *runtime.Scheme

	// DynamicClient lets ForResource serve custom resources, from a dynamic
	// shared informer factory owned (started and shut down) by the Factory.
	// nil: ForResource fails.
	DynamicClient dynamic.Interface

	// MetadataClient lets ForMetadata serve metadata-only informers, from a
	// metadata shared informer factory owned by the Factory. nil:
	// ForMetadata fails.
	MetadataClient metadata.Interface

	// Logger is handed to informer event handlers and to the error
	// handler's context. The zero Logger (nil sink) means klog.Background();
	// note that logr.Discard() is that zero Logger too: to discard, give a
	// Logger whose sink is disabled.
	Logger klog.Logger

	// ErrorHandler receives the problems the factory cannot return to a
	// caller: objects of the wrong type in an event stream or cache,
	// failing transforms and index functions. nil means
	// k8s.io/apimachinery/pkg/util/runtime.HandleErrorWithContext. The
	// handler may run while an informer holds its cache lock: it must
	// return quickly and must not read the informer's cache.
	ErrorHandler func(ctx context.Context, err error)

	// EventRecorder, when set, records a Warning event (reason
	// ReasonUndecodable) on each custom resource that ForResource cannot
	// convert to its Go type, so that `kubectl describe` shows why no
	// controller acts on it. The error handler is told too. A
	// manager.Manager gives the factory it builds its own recorder.
	EventRecorder record.EventRecorder

	// Clock drives the factory's own timers: the mutation detector's and
	// the memory budgets' periodic checks, the staleness check and the
	// release grace. nil means clock.RealClock{}. client-go's informers keep their own clocks.
	Clock clock.WithTicker

	// InformerName makes the factory's typed informers report client-go's
	// informer metrics (queued items, always 0 here; processing latency;
	// the store's resourceVersion) under this name, through the provider a
	// manager.Manager registers (see docs/metrics.md). A provider given to
	// cache.SetInformerMetricsProvider by other code receives the store's
	// resourceVersion only: client-go keeps its provider to itself, and
	// the rest is reported by ctrlkit's informers, which read the
	// Manager's. Only informers of a factory given a name report, and a
	// name may belong to one factory of the
	// process at a time: NewFactory reserves it (cache.NewInformerName) and
	// Shutdown releases it, after the informers stopped, so a later factory
	// may take it again.
	//
	// A name already held by another factory is reported to the error
	// handler as an error matching ErrInformerNameInUse; the factory then
	// works without informer metrics, and Factory.InformerName returns "".
	// "", the default, reserves nothing.
	//
	// Only the typed informers (For, and SharedInformerFactory's) report:
	// client-go v0.37's dynamic and metadata informer factories do not take
	// a name. Per resource, client-go reports for the first informer built
	// under the name only: for a scoped For (InNamespaces: one client-go
	// informer per namespace) that is one namespace's informer, the first
	// built; an informer the SharedInformerFactory escape hatch builds for a
	// resource already served by a scoped For reports nothing.
	InformerName string

	// ReleaseGrace is how long an informer that no view holds any more
	// (see Factory.HeldUntil) keeps running before it stops and frees its
	// cache. 0 means 5 s; a negative grace releases at
	// once. The grace spares a controller restarted within it a fresh
	// list; past it, the memory is returned.
	ReleaseGrace time.Duration

	// ShardSet makes every informer of the factory (For, ForResource,
	// ForMetadata) follow it, as InShardSet does: a factory of one member's
	// share of a server-side sharded ring (package sharding), whose
	// informers cannot forget the scope. Scope options that narrow a
	// sharded informer by namespace are refused, naming the informer.
	ShardSet *ShardSet
	// Unsharded lists the resources whose informers follow no ShardSet and
	// cache every object (the children of owners hashed by UID, whose own
	// UIDs hash elsewhere). Without ShardSet it does nothing.
	Unsharded []schema.GroupResource

	// StalenessCheck, when positive, makes the factory compare, every
	// StalenessCheck once started, each informer's last resourceVersion
	// with the API server's current one, read with a list of one object
	// (limit=1) in the informer's namespace, or cluster-wide: see
	// Factory.Staleness. resourceVersions are compared as integers, as
	// Kubernetes guarantees since v1.35 for the API server's own
	// resources. 0 or negative: off (a manager.Manager turns 0 into a
	// check every minute, negative into off). It needs a real
	// clientset (a fake has no REST client, and is not checked). The lists
	// need the list permission the informers already have.
	StalenessCheck time.Duration

	// MemoryBudget, when positive, bounds all the factory's informer caches
	// together, in bytes as Factory.CacheMemory estimates them, and
	// BudgetPolicy says what to do beyond it (it must be set with a
	// budget). The caches are compared with it every BudgetCheckInterval
	// once the factory started, and by CheckMemoryBudget. The sharing
	// table's fixed admission filter, which CacheMemory reports in
	// TableBytes, is not charged: the budget bounds what grows with the
	// caches. 0 means no budget; a negative budget, a budget without a
	// known policy, a policy without a budget, or a budget of a factory
	// with DisableAccounting is reported to the error handler and ignored.
	// Budgets of one informer are set with ByObject.
	MemoryBudget int64
	// BudgetPolicy is what the factory does over MemoryBudget (BudgetWarn,
	// BudgetFailReadiness or BudgetDegrade); there is no default.
	BudgetPolicy BudgetPolicy
	// BudgetCheckInterval is how often the caches are compared with the
	// memory budgets; 0 means 10 s.
	BudgetCheckInterval time.Duration

	// MutationDetector turns on the cache mutation detector, ctrlkit's
	// counterpart of client-go's cache.NewCacheMutationDetector (which
	// KUBE_CACHE_MUTATION_DETECTOR enables). It catches code that changes a
	// cached object in place, which breaks client-go's read-only contract
	// and, with structural sharing, changes every cached object sharing the
	// written part.
	//
	// Each object entering the cache (after every transform and sharing) is
	// fingerprinted and deep-copied. Every second, on Clock,
	// a goroutine owned by the factory (started by Start, stopped by
	// Shutdown) compares every cached object with its fingerprint and sends
	// a *MutationError, naming the object and the first changed field, to
	// MutationReport; Factory.CheckMutations runs the same check on demand.
	// Objects replaced by a newer version or deleted are no longer tracked.
	//
	// The detector doubles the memory of the cache and walks it every
	// interval: it is meant for tests (testkit turns it on) and for
	// debugging. Without it the factory does no work and keeps nothing for
	// it.
	MutationDetector bool
	// MutationReport receives the mutation detector's errors; nil sends
	// them to the error handler. Setting it turns MutationDetector on.
	MutationReport func(error)

	// KeepManagedFields keeps metadata.managedFields in cached objects. By
	// default the factory drops them on entry to the cache: they are
	// server-side-apply bookkeeping controllers rarely read, and often a
	// third of an object's bytes (see docs/performance.md).
	KeepManagedFields bool

	// DisableSharing turns off structural sharing in the cache. By default
	// the factory's last transform, after managedFields stripping and the
	// ByObject transforms, makes equal sub-objects of cached objects one
	// instance: the labels, owner references, tolerations, probes, volume
	// sources or resource lists that the Pods of one ReplicaSet all carry
	// are held once, not once per Pod (see docs/performance.md). Only
	// sub-objects that serialise identically are shared; a sub-object is
	// kept only while some cached object uses it.
	//
	// Sharing relies on client-go's contract that cached objects are
	// read-only: an object from a lister, an index or a handler must not be
	// mutated (call DeepCopy first, which copies shared parts too). Code
	// that breaks this contract corrupts, with sharing, the other objects
	// holding the sub-object it writes to, not only the cache's copy of one
	// object. MutationDetector (on in testkit) finds such writes and names
	// the field written. Note that resource.Quantity's AsDec and ToDec
	// rewrite the quantity they are called on: call them on a copy.
	// DisableSharing keeps one private tree per object, at the memory cost
	// of the objects' duplicated parts.
	DisableSharing bool

	// ShareWith makes this factory share sub-objects through the table of
	// that factory instead of one of its own: factories of similar clusters
	// (a multicluster.Fleet's) store a sub-object identical across them once,
	// and the table's fixed admission filter once. This factory's
	// CacheMemory then reports no TableBytes: the table is the other's.
	// Ignored with DisableSharing, or when that factory has sharing
	// disabled.
	ShareWith *Factory

	// DisableAccounting turns off the estimate of what each informer's
	// cache holds (Factory.CacheMemory, the ctrlkit_informer_objects and
	// ctrlkit_informer_bytes metrics, memory budgets). Accounting sizes each
	// object as it enters the cache, within the walk that shares its
	// sub-objects, and keeps one small entry per cached object (its cost is
	// in docs/performance.md, "Cache memory accounting").
	DisableAccounting bool

	// ByObject holds the settings of the typed informers of single Go
	// types, each built by ByObject. Several entries for one type add up:
	// their transforms run in the order given, each budget is its own.
	ByObject []ObjectOverride
}

// ObjectOptions are the settings of the typed informer of T, as
// controller-runtime's cache.ByObject: pass them to ByObject.
type ObjectOptions[T Object] struct {
	// Transform runs on each object of type T before it enters the cache
	// (after managedFields stripping, before structural sharing, see
	// Options.DisableSharing). Use it to drop fields a controller never
	// reads.
	//
	// It may mutate and return its argument (client-go hands it a private
	// copy) and must be idempotent. If it returns an error, the error is
	// reported to the factory's error handler and the object it was given
	// is cached (with whatever it changed in place): returning the error to
	// client-go would fail the whole list or watch and retry it forever.
	Transform func(T) (T, error)

	// MemoryBudget is Options.MemoryBudget for the cache of this informer
	// alone, with its BudgetPolicy; with BudgetDegrade the informer is
	// degradable.
	MemoryBudget int64
	// BudgetPolicy is what the factory does over this informer's
	// MemoryBudget; there is no default.
	BudgetPolicy BudgetPolicy

	// Degradable marks the informer degradable: a budget with policy
	// BudgetDegrade that is exceeded makes it cache its objects' metadata
	// only. Mark only informers whose every reader needs no more than
	// metadata (owner references, labels, finalizers) when memory runs
	// short.
	Degradable bool
}

// ObjectOverride is the settings of one Go type's informer, in
// Options.ByObject. Build it with ByObject; the zero ObjectOverride does
// nothing.
type ObjectOverride struct {
	apply func(*factoryConfig)
}

// ByObject returns o as an entry of Options.ByObject: settings of the
// typed informer of T, which a factory-wide field cannot give per type.
// The settings follow the Go type: with *unstructured.Unstructured or
// *metav1.PartialObjectMetadata they apply to every informer of that view
// (ForResource, ForMetadata) in the factory, whatever its resource: a
// transform or budget for one resource of those views needs a factory of
// its own.
func ByObject[T Object](o ObjectOptions[T]) ObjectOverride {
	t := reflect.TypeFor[T]()
	return ObjectOverride{apply: func(c *factoryConfig) {
		if o.Transform != nil {
			c.addTransform(t, func(obj any) (any, error) {
				typed, ok := obj.(T)
				if !ok {
					return obj, nil
				}
				return o.Transform(typed)
			})
		}
		if o.MemoryBudget != 0 || o.BudgetPolicy != 0 {
			c.budgets = append(c.budgets, &budget{bytes: o.MemoryBudget, policy: o.BudgetPolicy, typ: t})
			if o.BudgetPolicy == BudgetDegrade {
				c.degradable = append(c.degradable, t)
			}
		}
		if o.Degradable {
			c.degradable = append(c.degradable, t)
		}
	}}
}

// factoryConfig holds what the Options set, with the defaults applied. It
// is fixed once NewFactory returns, so the transform path reads it without
// locks.
type factoryConfig struct {
	resync            time.Duration
	namespace         string
	tweak             func(*metav1.ListOptions)
	keepManagedFields bool
	noSharing         bool
	noAccounting      bool
	budgets           []*budget
	degradable        []reflect.Type
	budgetInterval    time.Duration
	stalenessInterval time.Duration
	transforms        map[reflect.Type]func(any) (any, error)
	errorHandler      func(context.Context, error)
	recorder          record.EventRecorder
	logger            klog.Logger
	dynamicClient     dynamic.Interface
	metadataClient    metadata.Interface
	mutationDetector  bool
	mutationReport    func(error)
	clock             clock.WithTicker
	informerName      string
	scheme            *runtime.Scheme
	releaseGrace      time.Duration
	shards            *ShardSet
	unsharded         []schema.GroupResource
}

// config turns o into the factory's configuration, applying the defaults.
func (o Options) config() factoryConfig {
	c := factoryConfig{
		resync:            o.Resync,
		namespace:         o.Namespace,
		tweak:             o.TweakListOptions,
		keepManagedFields: o.KeepManagedFields,
		noSharing:         o.DisableSharing,
		noAccounting:      o.DisableAccounting,
		budgetInterval:    o.BudgetCheckInterval,
		stalenessInterval: o.StalenessCheck,
		errorHandler:      o.ErrorHandler,
		recorder:          o.EventRecorder,
		logger:            o.Logger,
		dynamicClient:     o.DynamicClient,
		metadataClient:    o.MetadataClient,
		mutationDetector:  o.MutationDetector || o.MutationReport != nil,
		mutationReport:    o.MutationReport,
		clock:             o.Clock,
		informerName:      o.InformerName,
		scheme:            o.Scheme,
		releaseGrace:      o.ReleaseGrace,
		shards:            o.ShardSet,
		unsharded:         slices.Clone(o.Unsharded),
	}
	switch {
	case c.releaseGrace == 0:
		c.releaseGrace = defaultReleaseGrace
	case c.releaseGrace < 0:
		c.releaseGrace = 0
	}
	if c.logger.GetSink() == nil {
		c.logger = klog.Background()
	}
	if o.MemoryBudget != 0 || o.BudgetPolicy != 0 {
		c.budgets = append(c.budgets, &budget{bytes: o.MemoryBudget, policy: o.BudgetPolicy})
	}
	for _, by := range o.ByObject {
		if by.apply != nil {
			by.apply(&c)
		}
	}
	return c
}

// addTransform appends fn to the transforms of type t: they run in the
// order added, and the first error stops the chain.
func (c *factoryConfig) addTransform(t reflect.Type, fn func(any) (any, error)) {
	if c.transforms == nil {
		c.transforms = map[reflect.Type]func(any) (any, error){}
	}
	prev := c.transforms[t]
	c.transforms[t] = func(obj any) (any, error) {
		if prev != nil {
			var err error
			if obj, err = prev(obj); err != nil {
				return obj, err
			}
		}
		in := obj
		out, err := fn(obj)
		if err != nil {
			return in, fmt.Errorf("transform for %s: %w", object.TypeName(t), err)
		}
		return out, nil
	}
}
