package informer

import (
	"context"
	"fmt"
	"reflect"
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

// FactoryOption configures NewFactory. Options are applied in order; a later
// option of the same kind replaces an earlier one (WithTransform composes
// instead, see there).
type FactoryOption func(*factoryConfig)

// factoryConfig holds what the options set. It is fixed once NewFactory
// returns, so the transform path reads it without locks.
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
	logger            *klog.Logger
	dynamicClient     dynamic.Interface
	metadataClient    metadata.Interface
	mutationDetector  bool
	mutationReport    func(error)
	clock             clock.WithTicker
	informerName      string
	scheme            *runtime.Scheme
	releaseGrace      time.Duration
	releaseGraceSet   bool
	shards            *ShardSet
	unsharded         []schema.GroupResource
}

// WithResync sets the default resync period of every informer (0, the
// default, means no periodic resync). Resync re-delivers every cached object
// as an update whose old and new objects share a resourceVersion; see
// IsResync and HandlerFuncs.SkipResync.
func WithResync(d time.Duration) FactoryOption {
	return func(c *factoryConfig) { c.resync = d }
}

// WithNamespace limits every namespaced informer of the factory to one
// namespace. The default, metav1.NamespaceAll (""), watches all namespaces.
func WithNamespace(ns string) FactoryOption {
	return func(c *factoryConfig) { c.namespace = ns }
}

// WithTweakListOptions lets the caller narrow every list and watch the
// factory issues, typically with a label or field selector. Listers then
// only see what matched.
func WithTweakListOptions(fn func(*metav1.ListOptions)) FactoryOption {
	return func(c *factoryConfig) { c.tweak = fn }
}

// WithoutManagedFieldsStripping keeps metadata.managedFields in cached
// objects. By default the factory drops them on entry to the cache: they are
// server-side-apply bookkeeping controllers rarely read, and often a third of
// an object's bytes (see docs/performance.md).
func WithoutManagedFieldsStripping() FactoryOption {
	return func(c *factoryConfig) { c.keepManagedFields = true }
}

// WithoutSharing turns off structural sharing in the cache. By default the
// factory's last transform, after managedFields stripping and WithTransform
// functions, makes equal sub-objects of cached objects one instance: the
// labels, owner references, tolerations, probes, volume sources or resource
// lists that the Pods of one ReplicaSet all carry are held once, not once per
// Pod (see docs/performance.md). Only sub-objects that serialise identically
// are shared; a sub-object is kept only while some cached object uses it.
//
// Sharing relies on client-go's contract that cached objects are read-only:
// an object from a lister, an index or a handler must not be mutated (call
// DeepCopy first, which copies shared parts too). Code that breaks this
// contract corrupts, with sharing, the other objects holding the sub-object
// it writes to, not only the cache's copy of one object. WithMutationDetector
// (on in testkit) finds such writes and names the field written. Note that
// resource.Quantity's AsDec and ToDec rewrite the quantity they are called on:
// call them on a copy. WithoutSharing keeps one private tree per object, at
// the memory cost of the objects' duplicated parts.
func WithoutSharing() FactoryOption {
	return func(c *factoryConfig) { c.noSharing = true }
}

// WithoutAccounting turns off the estimate of what each informer's cache
// holds (Factory.CacheMemory, the ctrlkit_informer_objects and
// ctrlkit_informer_bytes metrics, memory budgets). Accounting sizes each
// object as it enters the cache, within the walk that shares its
// sub-objects, and keeps one small entry per cached object (its cost is in
// docs/performance.md, "Cache memory accounting").
func WithoutAccounting() FactoryOption {
	return func(c *factoryConfig) { c.noAccounting = true }
}

// WithTransform registers a transform for objects of type T, run on each
// object before it enters the cache (after managedFields stripping, before
// structural sharing, see WithoutSharing). Use it to
// drop fields a controller never reads. Several transforms for one T run in
// the order given.
//
// The transform may mutate and return its argument (client-go hands it a
// private copy) and must be idempotent. If it returns an error, the error is
// reported to the factory's error handler and the object it was given is
// cached (with whatever it changed in place): returning the error to
// client-go would fail the whole list or watch and retry it forever.
func WithTransform[T Object](fn func(T) (T, error)) FactoryOption {
	return func(c *factoryConfig) {
		if fn == nil {
			return
		}
		if c.transforms == nil {
			c.transforms = map[reflect.Type]func(any) (any, error){}
		}
		t := reflect.TypeFor[T]()
		prev := c.transforms[t]
		c.transforms[t] = func(obj any) (any, error) {
			if prev != nil {
				var err error
				if obj, err = prev(obj); err != nil {
					return obj, err
				}
			}
			typed, ok := obj.(T)
			if !ok {
				return obj, nil
			}
			out, err := fn(typed)
			if err != nil {
				return obj, fmt.Errorf("transform for %s: %w", object.TypeName(t), err)
			}
			return out, nil
		}
	}
}

// WithErrorHandler sets where the factory reports problems it cannot return
// to a caller: objects of the wrong type in an event stream or cache, failing
// transforms and index functions. The default is
// k8s.io/apimachinery/pkg/util/runtime.HandleErrorWithContext. The handler may
// run while an informer holds its cache lock: it must return quickly and must
// not read the informer's cache.
func WithErrorHandler(fn func(ctx context.Context, err error)) FactoryOption {
	return func(c *factoryConfig) { c.errorHandler = fn }
}

// WithEventRecorder makes the factory record a Warning event (reason
// ReasonUndecodable) on each custom resource that ForResource cannot convert
// to its Go type, so that `kubectl describe` shows why no controller acts on
// it. The error handler is told too. Without a recorder only the error
// handler is. A manager.Manager gives the factory it builds its own recorder.
func WithEventRecorder(rec record.EventRecorder) FactoryOption {
	return func(c *factoryConfig) { c.recorder = rec }
}

// WithLogger sets the logger handed to informer event handlers and to the
// error handler's context. The default is klog.Background().
func WithLogger(logger klog.Logger) FactoryOption {
	return func(c *factoryConfig) { c.logger = &logger }
}

// WithScheme names the kinds of the Go types registered in s, for informers of custom
// resources (ForResource) whose kind cannot be told from the type's name: Owns and the
// mappings keyed on an owner's kind need it. Most need no scheme: a Go type named after
// its kind (PodSet, served as podsets) is recognised. client-go's scheme is always
// consulted after s. A manager.Manager passes its Options.Scheme.
func WithScheme(s *runtime.Scheme) FactoryOption {
	return func(c *factoryConfig) { c.scheme = s }
}

// WithDynamicClient gives the factory a dynamic client so that ForResource can
// serve custom resources from a dynamic shared informer factory owned (started
// and shut down) by this Factory.
func WithDynamicClient(client dynamic.Interface) FactoryOption {
	return func(c *factoryConfig) { c.dynamicClient = client }
}

// WithMetadataClient gives the factory a metadata client so that ForMetadata
// can serve metadata-only informers from a metadata shared informer factory
// owned (started and shut down) by this Factory.
func WithMetadataClient(client metadata.Interface) FactoryOption {
	return func(c *factoryConfig) { c.metadataClient = client }
}

// WithMutationDetector turns on the cache mutation detector, ctrlkit's
// counterpart of client-go's cache.NewCacheMutationDetector (which
// KUBE_CACHE_MUTATION_DETECTOR enables). It catches code that changes a cached
// object in place, which breaks client-go's read-only contract and, with
// structural sharing, changes every cached object sharing the written part.
//
// Each object entering the cache (after every transform and sharing) is
// fingerprinted and deep-copied. Every MutationCheckInterval, on the clock of
// WithClock, a goroutine owned by the factory (started by Start, stopped by
// Shutdown) compares every cached object with its fingerprint and sends a
// *MutationError, naming the object and the first changed field, to report;
// Factory.CheckMutations runs the same check on demand. A nil report sends
// the errors to the factory's error handler. Objects replaced by a newer
// version or deleted are no longer tracked.
//
// The detector doubles the memory of the cache and walks it every interval:
// it is meant for tests (testkit turns it on) and for debugging.
// Without it the factory does no work and keeps nothing for it.
func WithMutationDetector(report func(error)) FactoryOption {
	return func(c *factoryConfig) {
		c.mutationDetector = true
		c.mutationReport = report
	}
}

// WithClock sets the clock of the factory's own timers: the mutation
// detector's periodic check (WithMutationDetector). The default is
// clock.RealClock{}. client-go's informers keep their own clocks.
func WithClock(clk clock.WithTicker) FactoryOption {
	return func(c *factoryConfig) { c.clock = clk }
}

// WithInformerName makes the factory's informers report client-go's informer
// metrics (queued items, processing latency, the store's resourceVersion)
// under name, through the provider registered with
// cache.SetInformerMetricsProvider (a manager.Manager registers one; see
// docs/metrics.md). client-go reports only for informers of a factory given
// a name, and a name may belong to one factory of the process at a time:
// NewFactory reserves it (cache.NewInformerName) and Shutdown releases it,
// after the informers stopped, so a later factory may take it again.
//
// A name already held by another factory is reported to the error handler
// as an error matching ErrInformerNameInUse; the factory then works without
// informer metrics, and InformerName returns "". The empty name, the
// default, reserves nothing.
//
// Only the typed informers (For, and SharedInformerFactory's) report:
// client-go v0.37's dynamic and metadata informer factories do not take a
// name. Per resource, client-go reports for the first informer built under
// the name only: for a scoped For (InNamespaces: one client-go informer per
// namespace) that is one namespace's informer, the first built; an informer the
// SharedInformerFactory escape hatch builds for a resource already served
// by a scoped For reports nothing.
func WithInformerName(name string) FactoryOption {
	return func(c *factoryConfig) { c.informerName = name }
}

// WithReleaseGrace sets how long an informer that no view holds any more
// (see Factory.HeldUntil) keeps running before it stops and frees its
// cache; DefaultReleaseGrace when not set, at once for d <= 0. The grace
// spares a controller restarted within it a fresh list; past it, the memory
// is returned.
func WithReleaseGrace(d time.Duration) FactoryOption {
	return func(c *factoryConfig) { c.releaseGrace, c.releaseGraceSet = d, true }
}
