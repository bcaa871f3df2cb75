package informer

import (
	"cmp"
	"context"
	"errors"
	"hash/maphash"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// mutationCheckInterval is how often a factory with Options.MutationDetector
// checks every tracked object, as client-go's cache mutation detector does.
const mutationCheckInterval = time.Second

// MutationError reports a cached object that was changed in place after it
// entered the cache (errors.As finds it). Cached objects are read-only; with structural sharing
// (the default) a write to one can change many (see Options.DisableSharing).
type MutationError struct {
	// Informer names the informer holding the object (see Informer.Name).
	Informer string
	// Kind is the object's kind, such as Pod, when known.
	Kind string
	// Namespace and Name identify the object.
	Namespace, Name string
	// Path is the first changed field, such as metadata.labels["app"] or
	// spec.containers[0].image; empty when it could not be located.
	Path string
	// Before and After describe the value at Path when the object entered
	// the cache and now.
	Before, After string
}

func (e *MutationError) Error() string {
	var b strings.Builder
	b.WriteString("informer " + e.Informer + ": cached ")
	if e.Kind != "" {
		b.WriteString(e.Kind + " ")
	}
	b.WriteString(`"`)
	if e.Namespace != "" {
		b.WriteString(e.Namespace + "/")
	}
	b.WriteString(e.Name + `" was changed in place`)
	if e.Path != "" {
		b.WriteString(" at " + e.Path + " (" + e.Before + " -> " + e.After + ")")
	}
	b.WriteString("; cached objects are read-only: DeepCopy before changing one")
	return b.String()
}

// CheckMutations compares every cached object of the factory's informers
// with the fingerprint taken when it entered the cache and returns a
// *MutationError for each one changed since (joined with errors.Join), or
// nil. An object is reported once per change: the check takes its changed
// state as the new reference. Without Options.MutationDetector it returns nil.
// The periodic check sends what it finds to the detector's report function;
// CheckMutations returns it instead.
func (f *Factory) CheckMutations() error {
	if f.detector == nil {
		return nil
	}
	return errors.Join(f.detector.check()...)
}

// mutationDetector remembers, for each object entering a watched informer's
// cache, a fingerprint and a deep copy (to name the changed field), and
// checks them on demand and every mutationCheckInterval.
type mutationDetector struct {
	report func(error)
	clock  clock.WithTicker
	seed   maphash.Seed

	mu      sync.Mutex
	watched map[registryKey]watchedInformer
	records map[recordKey]*tracked

	checkMu sync.Mutex // one check at a time
	wg      sync.WaitGroup
	started bool // guarded by mu
}

// watchedInformer is an informer whose deletions untrack objects.
type watchedInformer struct{ name, kind string }

type recordKey struct {
	informer registryKey
	key      string // namespace/name
}

// tracked is one tracked object.
type tracked struct {
	obj       any
	hash      uint64
	copy      any // nil when the object could not be copied
	namespace string
	name      string
}

func newMutationDetector(report func(error), clk clock.WithTicker) *mutationDetector {
	return &mutationDetector{
		report: report, clock: clk, seed: maphash.MakeSeed(),
		watched: map[registryKey]watchedInformer{}, records: map[recordKey]*tracked{},
	}
}

// watch starts tracking the objects of a new informer of the factory: its
// deletions untrack them. Only watched informers' objects are tracked, so an
// informer taken only through SharedInformerFactory, whose deletions the
// detector would not see, cannot fill the detector up.
func (d *mutationDetector) watch(key registryKey, name, kind string, inf cache.SharedIndexInformer) error {
	d.mu.Lock()
	d.watched[key] = watchedInformer{name: name, kind: kind}
	d.mu.Unlock()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) { d.forget(key, obj) },
	})
	return err
}

// unwatch stops tracking informer key, which stopped: its records go.
func (d *mutationDetector) unwatch(key registryKey) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.watched, key)
	for rk := range d.records {
		if rk.informer == key {
			delete(d.records, rk)
		}
	}
}

// track records obj, entering the cache of the informer key (for typed
// informers only the source is set: the key is the object's type). It
// replaces the record of the object's previous version.
// enter fingerprints obj, the last step of its way into a cache.
func (d *mutationDetector) enter(key registryKey, obj any) any {
	d.track(key, obj)
	return obj
}

func (d *mutationDetector) track(key registryKey, obj any) {
	if key.source == sourceTyped {
		key.typ = reflect.TypeOf(obj)
	}
	d.mu.Lock()
	_, ok := d.watched[key]
	d.mu.Unlock()
	if !ok {
		return
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	rec := d.newRecord(obj, m.GetNamespace(), m.GetName())
	d.mu.Lock()
	d.records[recordKey{informer: key, key: cacheKey(rec.namespace, rec.name)}] = rec
	d.mu.Unlock()
}

// tracks reports whether obj itself (not only an object of its key) is tracked: it has been
// transformed for the informer key already.
func (d *mutationDetector) tracks(key registryKey, obj any) bool {
	rk, ok := recordKeyOf(key, obj)
	if !ok {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	rec := d.records[rk]
	return rec != nil && rec.obj == obj
}

// recordKeyOf is the key of obj's record in the informer key (for typed informers only the
// source is set: the key is the object's type); false for an object without metadata.
func recordKeyOf(key registryKey, obj any) (recordKey, bool) {
	if key.source == sourceTyped {
		key.typ = reflect.TypeOf(obj)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return recordKey{}, false
	}
	return recordKey{informer: key, key: cacheKey(m.GetNamespace(), m.GetName())}, true
}

func (d *mutationDetector) newRecord(obj any, namespace, name string) *tracked {
	return &tracked{obj: obj, hash: fingerprint(d.seed, obj), copy: deepCopy(obj), namespace: namespace, name: name}
}

// forget untracks a deleted object, unless a newer version of its key has
// been tracked since.
func (d *mutationDetector) forget(key registryKey, obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	rk, ok := recordKeyOf(key, obj)
	if !ok {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if rec := d.records[rk]; rec != nil && rec.obj == obj {
		delete(d.records, rk)
	}
}

// tracked reports how many objects are tracked.
func (d *mutationDetector) tracked() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.records)
}

// check compares every tracked object with its record.
func (d *mutationDetector) check() []error {
	d.checkMu.Lock()
	defer d.checkMu.Unlock()
	type item struct {
		rk  recordKey
		rec *tracked
		inf watchedInformer
	}
	d.mu.Lock()
	items := make([]item, 0, len(d.records))
	for rk, rec := range d.records {
		items = append(items, item{rk, rec, d.watched[rk.informer]})
	}
	d.mu.Unlock()
	var errs []*MutationError
	for _, it := range items {
		if fingerprint(d.seed, it.rec.obj) == it.rec.hash {
			continue
		}
		e := &MutationError{Informer: it.inf.name, Kind: it.inf.kind, Namespace: it.rec.namespace, Name: it.rec.name}
		if e.Kind == "" {
			if o, ok := it.rec.obj.(runtime.Object); ok {
				e.Kind = o.GetObjectKind().GroupVersionKind().Kind
			}
		}
		if it.rec.copy != nil {
			e.Path, e.Before, e.After, _ = firstDifference(reflect.ValueOf(it.rec.copy), reflect.ValueOf(it.rec.obj), "")
		}
		errs = append(errs, e)
		// The changed state is the new reference: report each change once.
		fresh := d.newRecord(it.rec.obj, it.rec.namespace, it.rec.name)
		d.mu.Lock()
		if d.records[it.rk] == it.rec {
			d.records[it.rk] = fresh
		}
		d.mu.Unlock()
	}
	slices.SortFunc(errs, func(a, b *MutationError) int {
		return cmp.Or(cmp.Compare(a.Informer, b.Informer), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return out
}

// start runs the periodic check until ctx ends; only the first call starts it.
func (d *mutationDetector) start(ctx context.Context) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started {
		return
	}
	d.started = true
	ticker := d.clock.NewTicker(mutationCheckInterval)
	d.wg.Go(func() {
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C():
				for _, err := range d.check() {
					d.report(err)
				}
			}
		}
	})
}

// wait returns once the periodic check has stopped (its context ended).
func (d *mutationDetector) wait() { d.wg.Wait() }

func cacheKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// deepCopy copies obj for locating changed fields later, or returns nil.
// An unstructured object holding values JSON does not have (a Go int in a
// hand-made fake object) makes DeepCopyObject panic.
func deepCopy(obj any) (out any) {
	o, ok := obj.(runtime.Object)
	if !ok {
		return nil
	}
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	return o.DeepCopyObject()
}
