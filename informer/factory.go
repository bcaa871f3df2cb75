package informer

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/internal/hashcons"
	"github.com/ctrlkit/ctrlkit/internal/object"
)

// Factory hands out shared typed informers. Every informer is client-go's
// own SharedIndexInformer, built as client-go's generated informers build
// theirs (and, when configured, by client-go's dynamic and metadata
// factories): one List+Watch per type however many controllers ask.
// SharedInformerFactory serves client-go's generated informers from the
// same informers.
//
// A Factory is safe for concurrent use. Create it with NewFactory, obtain
// informers with For, ForMetadata or ForResource, then Start it; Shutdown
// stops every informer and waits for their goroutines.
//
// An informer lives as long as its factory, unless it was handed out only
// through views made by HeldUntil: then it stops, alone, once every such
// view's context ended (see HeldUntil).
type Factory struct {
	*factory
	// hold is the holder of a view made by HeldUntil; nil for the factory
	// itself, whose informers live as long as it does.
	hold *holder
}

// factory is the state a Factory and its views share.
type factory struct {
	cfg         factoryConfig
	ctx         context.Context // carries the logger for the error handler
	logger      klog.Logger
	client      kubernetes.Interface
	hasClient   bool
	table       *hashcons.Table   // nil with Options.DisableSharing
	tableShared bool              // table is another factory's (Options.ShareWith)
	detector    *mutationDetector // nil without Options.MutationDetector
	steps       []step            // an object's way into a cache (buildSteps)
	// name is the reserved name of Options.InformerName; nil without one. Set
	// by NewFactory; the Shutdown of the informer factories given it
	// releases it.
	name *cache.InformerName

	typed    *typedInformers    // the built-in types' informers
	dynamic  *resourceInformers // nil without Options.DynamicClient
	metadata *resourceInformers // nil without Options.MetadataClient

	mu        sync.Mutex
	informers map[registryKey]registered
	runCtx    context.Context // set by the first Start; informers created later start with it
	cancel    context.CancelFunc
	shutdown  bool
	// shutdownOnce runs the shutdown of the informer factories once.
	shutdownOnce sync.Once
	// scoped holds the informer factories of scoped informers (one per
	// namespace of a scope), started and shut down with the others.
	scoped []startable
	// stop is closed by Shutdown; waiters are the goroutines that wait for
	// it (see goUntilShutdown).
	stop    chan struct{}
	waiters sync.WaitGroup
	// lives holds the lifetime of each informer first handed out through a
	// view (lifetime.go); informers of the factory itself have none.
	lives map[registryKey]*life
	// meters holds each accounted informer's meter (memory.go), by
	// registryKey; read by the transform, so not under mu.
	meters sync.Map
	// budgets is nil without memory budgets (budget.go).
	budgets *budgets
	// staleness is nil without Options.StalenessCheck (staleness.go).
	staleness *staleness
	// warned holds the resources warned about as unscoped (warnUnscoped).
	warned map[string]bool
}

// startable is what the factory needs from an informer factory: its own of
// built-in types, or client-go's dynamic or metadata one.
type startable interface {
	Start(stopCh <-chan struct{})
	Shutdown()
}

// registryKey identifies one shared informer of the factory.
type registryKey struct {
	source source
	typ    reflect.Type                // typed informers
	gvr    schema.GroupVersionResource // metadata and dynamic informers
}

type source int

const (
	sourceTyped source = iota
	sourceMetadata
	sourceDynamic
)

// registered is what the factory needs from every informer it handed out.
type registered interface {
	Name() string
	GVR() schema.GroupVersionResource
	lastResourceVersion() string
	HasSynced() bool
	HasSyncedChecker() cache.DoneChecker
	servedType() reflect.Type
	servedScope() scope
	listenForMeter() error
}

// NewFactory returns a Factory over client, configured by opts (the zero
// Options for every default: informers watch all namespaces, never resync,
// strip managedFields and report problems through
// utilruntime.HandleErrorWithContext). Settings NewFactory cannot honour
// (a memory budget without a policy, say) are reported to the error
// handler and ignored: a factory is always returned.
//
// client may be nil for a factory that serves only ForMetadata and
// ForResource; For then returns an error matching ErrNoClient.
func NewFactory(client kubernetes.Interface, opts Options) *Factory {
	f := &Factory{factory: &factory{informers: map[registryKey]registered{}, lives: map[registryKey]*life{},
		client: client, hasClient: client != nil, stop: make(chan struct{}), cfg: opts.config()}}
	f.logger = f.cfg.logger
	f.ctx = klog.NewContext(context.Background(), f.logger)
	f.table, f.tableShared = sharingTable(f.cfg.noSharing, opts.ShareWith)
	f.budgets = f.newBudgets()
	f.staleness = f.newStaleness()
	if f.cfg.mutationDetector {
		report := f.cfg.mutationReport
		if report == nil {
			report = f.report
		}
		f.detector = newMutationDetector(report, f.clock())
	}
	f.buildSteps()

	if f.cfg.informerName != "" {
		name, err := cache.NewInformerName(f.cfg.informerName)
		if err != nil {
			// NewFactory returns no error: a factory without informer
			// metrics still serves its informers.
			f.report(fmt.Errorf("informer metrics name %q: %w: %w", f.cfg.informerName, ErrInformerNameInUse, err))
		} else {
			f.name = name
		}
	}
	// One transform for every typed informer; it dispatches on the object's
	// type to the per-type transforms.
	f.typed = newTypedInformers(client, f.cfg.resync, f.transform, f.name)

	if f.cfg.dynamicClient != nil {
		f.dynamic = newDynamicInformers(f.cfg.dynamicClient, f.cfg.namespace, f.cfg.tweak, f.cfg.resync)
	}
	if f.cfg.metadataClient != nil {
		// Transforms are set per informer (ForMetadata).
		f.metadata = newMetadataInformers(f.cfg.metadataClient, f.cfg.namespace, f.cfg.tweak, f.cfg.resync)
	}
	return f
}

// InformerName returns the name the factory's informers report their
// metrics under (Options.InformerName), or "" when it has none: no name was
// given, the name was in use, or Shutdown released it.
func (f *Factory) InformerName() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shutdown {
		return ""
	}
	return f.name.Name() // "" for nil
}

// Start runs every informer handed out so far. Informers handed out after
// Start are started at once, so a controller can ask for one late. The first
// Start's context governs them all: cancelling it, or calling Shutdown, stops
// them. Start does not block; use WaitForCacheSync to wait for the caches.
func (f *Factory) Start(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shutdown {
		return
	}
	if f.runCtx == nil {
		f.runCtx, f.cancel = context.WithCancel(ctx)
		if f.detector != nil {
			f.detector.start(f.runCtx)
		}
		if f.budgets != nil {
			f.waiters.Go(func() { f.runBudgets(f.stop) })
		}
		if f.staleness != nil {
			ctx := f.runCtx
			f.waiters.Go(func() { f.runStaleness(ctx, f.stop) })
		}
	}
	f.startLocked()
}

func (f *Factory) startLocked() {
	f.listenForMetersLocked()
	ctx := f.runCtx
	f.typed.StartWithContext(ctx)
	if f.dynamic != nil {
		f.dynamic.StartWithContext(ctx)
	}
	if f.metadata != nil {
		f.metadata.StartWithContext(ctx)
	}
	for _, s := range f.scoped {
		start(s, ctx)
	}
}

// Shutdown stops every informer and blocks until all their goroutines have
// returned. It is safe to call more than once and without Start; after it,
// Start does nothing.
func (f *Factory) Shutdown() {
	f.mu.Lock()
	if !f.shutdown {
		close(f.stop)
	}
	f.shutdown = true
	if f.cancel != nil {
		f.cancel()
	}
	scoped := slices.Clone(f.scoped)
	f.unregisterHoldersLocked()
	f.mu.Unlock()

	// Once: each informer factory's Shutdown releases the informer name
	// (Options.InformerName), and a Release after another factory has taken
	// the name drops that factory's claim on it. Concurrent callers wait
	// in Do until the first returns. Scoped factories may share the name:
	// the first Shutdown below releases it, a scoped one releases it again
	// right after, while a factory created meanwhile under the same name
	// would lose its claim (not its metrics).
	f.shutdownOnce.Do(func() {
		f.typed.Shutdown()
		if f.dynamic != nil {
			f.dynamic.Shutdown()
		}
		if f.metadata != nil {
			f.metadata.Shutdown()
		}
		for _, s := range scoped {
			s.Shutdown()
		}
		f.waiters.Wait()
		if f.detector != nil {
			f.detector.wait()
		}
		f.meters.Clear() // the caches are gone
	})
}

// goUntilShutdown runs fn in a goroutine owned by the factory: stop is
// closed by Shutdown, which waits for fn to return. After Shutdown fn is not
// run.
func (f *Factory) goUntilShutdown(fn func(stop <-chan struct{})) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shutdown {
		return
	}
	f.waiters.Go(func() { fn(f.stop) })
}

// HasSynced reports, without waiting, whether every informer handed out by
// the factory has synced (for one following a NamespaceSet or ShardSet, its
// latest change applied too).
func (f *Factory) HasSynced() bool {
	f.mu.Lock()
	infs := make([]registered, 0, len(f.informers))
	for _, inf := range f.informers {
		infs = append(infs, inf)
	}
	f.mu.Unlock()
	for _, inf := range infs {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

// WaitForCacheSync waits until every informer handed out by the factory has
// synced, or ctx ends. Its error names the informers that had not synced and
// matches ErrCacheSyncTimeout. An informer that was never started never
// syncs, so call Start first.
func (f *Factory) WaitForCacheSync(ctx context.Context) error {
	f.mu.Lock()
	infs := make([]interface{ HasSynced() bool }, 0, len(f.informers))
	for _, inf := range f.informers {
		infs = append(infs, inf)
	}
	f.mu.Unlock()
	// Map order is random; a stable order keeps errors reproducible.
	sort.Slice(infs, func(i, j int) bool {
		return infs[i].(registered).Name() < infs[j].(registered).Name()
	})
	return WaitForCacheSync(ctx, infs...)
}

// lookupOrCreate returns the informer registered under key, or creates one
// with create (called with f.mu held) and registers it. The informer is
// started at once if the factory already runs. An informer registered under
// key with another scope is a *ScopeConflictError.
func lookupOrCreate[T Object](f *Factory, key registryKey, sc scope, create func() (*sharedInformer[T], error)) (*sharedInformer[T], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if existing, ok := f.informers[key]; ok {
		inf, ok := existing.(*sharedInformer[T])
		if !ok {
			return nil, &conflictError{name: existing.Name(), have: existing.servedType(), want: reflect.TypeFor[T]()}
		}
		if have := existing.servedScope(); !have.equal(sc) {
			return nil, &ScopeConflictError{Informer: existing.Name(), Have: have.String(), Want: sc.String()}
		}
		f.holdLocked(key)
		return inf, nil
	}
	before := len(f.scoped)
	// undo drops the informer factories create made: not started, but a
	// NamespaceSet's runs a goroutine from the start.
	undo := func() {
		for _, s := range f.scoped[before:] {
			s.Shutdown()
		}
		f.scoped = f.scoped[:before]
	}
	inf, err := create()
	if err != nil {
		undo()
		return nil, err
	}
	inf.scope, inf.src = sc, key.source
	if f.detector != nil {
		if err := f.detector.watch(key, inf.name, inf.gvk.Kind, inf.inf); err != nil {
			undo()
			return nil, fmt.Errorf("informer %s: mutation detector: %w", inf.name, err)
		}
	}
	inf.meter = f.meter(key, inf.name, reflect.TypeFor[T](), sc, inf.inf)
	f.informers[key] = inf
	f.warnUnscopedLocked(key, inf.name, inf.gvr, sc)
	if f.hold != nil {
		// Built in informer factories of its own (held), so that it can
		// be stopped alone: those are f.scoped[before:].
		f.newLifeLocked(key, inf.name, before)
	}
	if f.runCtx != nil && !f.shutdown {
		f.startLocked()
	}
	return inf, nil
}

// conflictError: a resource already served as another Go type by this factory.
type conflictError struct {
	name       string
	have, want reflect.Type
}

func (e *conflictError) Error() string {
	return "informer " + e.name + " already serves " + object.TypeName(e.have) + ", cannot serve " + object.TypeName(e.want)
}

func (e *conflictError) Is(target error) bool { return target == ErrUnsupportedType }

// transform is the one TransformFunc of the factory's typed informers.
func (f *Factory) transform(obj any) (any, error) {
	return f.transformFor(registryKey{source: sourceTyped}, obj)
}

// transformFor is the factory's transform for objects entering the cache of
// informer key (for typed informers, the source alone): the factory's steps,
// in order (buildSteps).
func (f *Factory) transformFor(key registryKey, obj any) (any, error) {
	// client-go's watch-list transforms each listed object into its temporary store, and its
	// FIFO transforms the same object again on Replace. The detector, tracking the object since
	// the first pass, may be reading it: a second pass must not write to it.
	if f.detector != nil && f.detector.tracks(key, obj) {
		return obj, nil
	}
	for _, s := range f.steps {
		obj = s.enter(key, obj)
	}
	return obj, nil
}

// A step is one stage of an object's way into a cache. The factory builds
// its steps once (buildSteps), from its options, so an object passes only
// through the stages the factory needs; each step lives with its subsystem.
type step interface {
	enter(key registryKey, obj any) any
}

// buildSteps lays out the way into the caches: strip managedFields, run the
// per-type transforms, keep only the metadata of an informer a memory budget
// degraded, share equal sub-objects with other cached objects and account
// for the object's memory, then fingerprint it for the mutation detector.
// Sharing comes after every step that writes to the object: after it, the
// object must not be written to.
func (f *Factory) buildSteps() {
	if !f.cfg.keepManagedFields {
		f.steps = append(f.steps, stripManagedFields{})
	}
	if len(f.cfg.transforms) > 0 {
		f.steps = append(f.steps, typeTransforms{f})
	}
	if f.budgets != nil {
		f.steps = append(f.steps, degradeStep{f})
	}
	switch {
	case f.table != nil:
		f.steps = append(f.steps, shareStep{f})
	case !f.cfg.noAccounting:
		f.steps = append(f.steps, sizeStep{f})
	}
	if f.detector != nil {
		f.steps = append(f.steps, f.detector)
	}
}

// stripManagedFields drops an object's managedFields: cheap for typed and
// unstructured objects alike, a no-op when absent.
type stripManagedFields struct{}

func (stripManagedFields) enter(_ registryKey, obj any) any {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return obj
}

// typeTransforms runs the transform of Options.ByObject for the object's type.
type typeTransforms struct{ f *Factory }

func (t typeTransforms) enter(_ registryKey, obj any) any {
	fn := t.f.cfg.transforms[reflect.TypeOf(obj)]
	if fn == nil {
		return obj
	}
	out, err := fn(obj)
	if err != nil {
		// Returning the error would make client-go fail the whole list or
		// watch and retry forever; cache the object untransformed instead.
		t.f.report(err)
		return obj
	}
	return out
}

// report sends err to the configured error handler.
func (f *Factory) report(err error) {
	if f.cfg.errorHandler != nil {
		f.cfg.errorHandler(f.ctx, err)
		return
	}
	utilruntime.HandleErrorWithContext(f.ctx, err, "informer problem")
}

// clock is the clock of the factory's own timers (Options.Clock).
func (f *factory) clock() clock.WithTicker {
	if f.cfg.clock == nil {
		return clock.RealClock{}
	}
	return f.cfg.clock
}
