package informer

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/internal/hashcons"
)

// CacheMemory is what the informers of a factory hold, as estimated while
// objects enter and leave their caches (see Factory.CacheMemory).
type CacheMemory struct {
	// Informers are the factory's informers, the largest first.
	Informers []InformerMemory
	// TableBytes is the sharing table's own bookkeeping (its admission
	// filter and an entry per shared sub-object); 0 with Options.DisableSharing.
	TableBytes int64
	// Bytes is the sum of the informers' Bytes and TableBytes.
	Bytes int64
}

// InformerMemory is what one informer's cache holds.
type InformerMemory struct {
	// Resource is the informer's Name: "pods", "replicasets.apps".
	Resource string
	// Scope is what the informer watches, in the form of the scope label of
	// the ctrlkit_informer_* metrics: "cluster" (every namespace the
	// factory watches), "namespaces=a,b", "set=<set>", with
	// ";labels=<selector>" and ";fields=<selector>" when narrowed so.
	Scope string
	// Objects is how many objects the cache holds.
	Objects int
	// Bytes estimates the heap the cache keeps alive: each object's own
	// struct, sub-objects and strings, client-go's store entries and
	// built-in indexes, and the shared sub-objects its objects brought into
	// the factory's sharing table, counted once (in the informer whose
	// object brought them). Strings interned across objects are not
	// counted.
	Bytes int64
	// SharedBytes is the part of Bytes in shared sub-objects.
	SharedBytes int64
	// UnsharedBytes estimates what the same objects would take with
	// nothing shared (after managedFields stripping). UnsharedBytes/Bytes is
	// the dedup ratio.
	UnsharedBytes int64
	// Degraded is set once a memory budget made the informer cache its
	// objects' metadata only (BudgetDegrade).
	Degraded bool
	// Namespaces are the namespaces holding most of Bytes (without the
	// shared sub-objects), the largest first, at most 10; none for a
	// cluster-scoped resource.
	Namespaces []NamespaceMemory
}

// NamespaceMemory is what one namespace's objects take in a cache.
type NamespaceMemory struct {
	Namespace string
	Objects   int
	Bytes     int64
}

// topNamespaces is how many namespaces InformerMemory lists.
const topNamespaces = 10

// CacheMemory returns what the factory's informers hold, estimated as
// objects enter and leave their caches (nothing is walked here). It is
// empty with Options.DisableAccounting, and once the factory shut down. Informers taken only through
// SharedInformerFactory, never through For, are not accounted.
func (f *Factory) CacheMemory() CacheMemory {
	var out CacheMemory
	f.meters.Range(func(_, v any) bool {
		m := v.(*meter)
		inf := m.snapshot()
		inf.Degraded = m.typ != nil && f.isDegraded(m.typ)
		out.Informers = append(out.Informers, inf)
		return true
	})
	slices.SortFunc(out.Informers, func(a, b InformerMemory) int {
		return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Scope, b.Scope))
	})
	if f.table != nil && !f.tableShared && !f.cfg.noAccounting {
		out.TableBytes = f.table.TableBytes()
	}
	out.Bytes = out.TableBytes
	for _, m := range out.Informers {
		out.Bytes += m.Bytes
	}
	return out
}

// meter accounts for the objects in one informer's cache. Objects are
// recorded as they enter the cache (the factory's transform, which sizes
// them while it shares their sub-objects) and forgotten on deletion, keyed
// by UID: a deleted object's UID never comes back, so a late deletion
// cannot forget a newer object (objects without a UID, from fake clients,
// are keyed by namespace/name), and forgetting twice is harmless.
//
// Deletions reach the meter through the handlers of this package (every
// adapter forgets before it hands the event on), so it needs no handler
// registration of its own (with client-go's informers each cost two
// goroutines and a buffer). An informer that starts without such a
// handler gets a registration of its own (listen). Removing the last handler
// of a running informer could lose the deletions still on their way to it (a
// removed registration receives nothing more), so that one stays, muted, and
// keeps forgetting.
type meter struct {
	resource, scope string
	typ             reflect.Type // the Go type the informer serves
	// storeBytes is what client-go's store and indexes spend per object,
	// besides its key.
	storeBytes int64
	// acct is a heap object of its own: the sharing table's cleanups hold it
	// for as long as a shared node lives, and must not keep the meter alive
	// with it.
	acct *hashcons.Account

	mu         sync.Mutex
	objs       map[string]objectBytes
	own, full  int64
	namespaces map[string]*NamespaceMemory

	// What forgets deletions (mu held): the adapters registered by
	// AddHandler, and whether a listener of the meter's own (or a muted
	// adapter) runs. started: the informer was started.
	riders    map[cache.ResourceEventHandlerRegistration]*mutable
	kept      cache.ResourceEventHandlerRegistration // the muted one, if any
	listening bool
	started   bool
}

// mutable is what the meter holds of a handler adapter: a way to silence it.
type mutable struct{ muted atomic.Bool }

// objectBytes is what one object takes; 32 bits each keep the entry small
// (an object is far below 4 GiB).
type objectBytes struct {
	own, full uint32
}

func newMeter(resource, scope string, indexes int) *meter {
	// Per object: its slot in the store's map (key and interface), its
	// entry in each index's set (a key), and its slot here (a UID and
	// objectBytes).
	store := hashcons.MapEntryBytes(32) + int64(indexes)*hashcons.MapEntryBytes(16) + hashcons.MapEntryBytes(24)
	return &meter{resource: resource, scope: scope, storeBytes: store, acct: new(hashcons.Account),
		objs: map[string]objectBytes{}, namespaces: map[string]*NamespaceMemory{},
		riders: map[cache.ResourceEventHandlerRegistration]*mutable{}}
}

// forgetter is what an adapter calls on every deletion: nil without a meter.
func (m *meter) forgetter() func(any) {
	if m == nil {
		return nil
	}
	return m.forget
}

// ride records an adapter that forgets this meter's deletions.
func (m *meter) ride(reg cache.ResourceEventHandlerRegistration, mu *mutable) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.riders[reg] = mu
	m.mu.Unlock()
}

// leave is called before the adapter of reg is removed. It reports whether
// to keep its registration instead, muted: it is the last thing forgetting
// the deletions of a running informer.
func (m *meter) leave(reg cache.ResourceEventHandlerRegistration) (keep bool) {
	if m == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.kept != nil && reg == m.kept {
		return true // removed before: stays muted
	}
	mu, ok := m.riders[reg]
	if !ok {
		return false
	}
	delete(m.riders, reg)
	if len(m.riders) > 0 || m.listening || !m.started {
		return false
	}
	mu.muted.Store(true)
	m.kept, m.listening = reg, true
	return true
}

// listen is called before the informer starts: without an adapter to ride
// on, the meter registers a listener of its own.
func (m *meter) listen(inf cache.SharedIndexInformer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return nil
	}
	m.started = true
	if len(m.riders) > 0 || m.listening {
		return nil
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: m.forget}); err != nil {
		return err
	}
	m.listening = true
	return nil
}

// account is where the sharing table charges the meter's shared nodes.
func (m *meter) account() *hashcons.Account {
	if m == nil {
		return nil
	}
	return m.acct
}

// set records obj, of the given sizes, entering the cache, replacing its
// previous version.
func (m *meter) set(obj any, sz hashcons.Sizes) {
	o, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	ns, name := o.GetNamespace(), o.GetName()
	key := string(o.GetUID())
	if key == "" {
		key = cacheKey(ns, name)
	}
	store := hashcons.StringBytes(len(ns)+len(name)+1) + m.storeBytes
	b := objectBytes{own: clamp32(sz.Own + store), full: clamp32(sz.Full + store)}
	m.mu.Lock()
	defer m.mu.Unlock()
	prev, had := m.objs[key]
	m.objs[key] = b
	m.own += int64(b.own) - int64(prev.own)
	m.full += int64(b.full) - int64(prev.full)
	if ns == "" {
		return
	}
	n := m.namespaces[ns]
	if n == nil {
		n = &NamespaceMemory{Namespace: ns}
		m.namespaces[ns] = n
	}
	if !had {
		n.Objects++
	}
	n.Bytes += int64(b.own) - int64(prev.own)
}

func clamp32(n int64) uint32 {
	return uint32(min(max(n, 0), 1<<32-1))
}

// forget records the deletion of obj (or of a tombstone's object).
func (m *meter) forget(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	o, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	ns := o.GetNamespace()
	key := string(o.GetUID())
	if key == "" {
		key = cacheKey(ns, o.GetName())
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.objs[key]
	if !ok {
		return
	}
	delete(m.objs, key)
	m.own -= int64(b.own)
	m.full -= int64(b.full)
	if n := m.namespaces[ns]; n != nil {
		n.Objects--
		n.Bytes -= int64(b.own)
		if n.Objects == 0 {
			delete(m.namespaces, ns)
		}
	}
}

// bytes is the Bytes of the meter's informer.
func (m *meter) bytes() int64 {
	shared := m.acct.Shared()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.own + shared
}

func (m *meter) snapshot() InformerMemory {
	shared := m.acct.Shared()
	m.mu.Lock()
	out := InformerMemory{Resource: m.resource, Scope: m.scope, Objects: len(m.objs),
		Bytes: m.own + shared, SharedBytes: shared, UnsharedBytes: m.full}
	nss := make([]NamespaceMemory, 0, len(m.namespaces))
	for _, n := range m.namespaces {
		nss = append(nss, *n)
	}
	m.mu.Unlock()
	sort.Slice(nss, func(i, j int) bool {
		return nss[i].Bytes > nss[j].Bytes || nss[i].Bytes == nss[j].Bytes && nss[i].Namespace < nss[j].Namespace
	})
	if len(nss) > topNamespaces {
		nss = nss[:topNamespaces]
	}
	if len(nss) > 0 {
		out.Namespaces = nss
	}
	return out
}

// sharingTable is a new factory's sharing table: none without sharing,
// with's when given one that shares (shared is then true), else its own.
func sharingTable(disabled bool, with *Factory) (t *hashcons.Table, shared bool) {
	switch {
	case disabled:
		return nil, false
	case with != nil && with.table != nil:
		return with.table, true
	default:
		return hashcons.New(), false
	}
}

// shareStep shares the object's sub-objects with the other cached objects
// (the factory's table), charging the shared ones to its informer's meter,
// and records the object's size there.
type shareStep struct{ f *Factory }

func (s shareStep) enter(key registryKey, obj any) any {
	m := s.f.meterFor(key, obj)
	sz := s.f.table.Share(obj, m.account())
	if m != nil {
		m.set(obj, sz)
	}
	return obj
}

// sizeStep records the object's size in its informer's meter, without
// sharing (Options.DisableSharing).
type sizeStep struct{ f *Factory }

func (s sizeStep) enter(key registryKey, obj any) any {
	if m := s.f.meterFor(key, obj); m != nil {
		n := hashcons.Size(obj)
		m.set(obj, hashcons.Sizes{Own: n, Full: n})
	}
	return obj
}

// meterFor returns the meter of the informer key that obj enters (for
// typed informers only the source is set: the object's type names the
// informer), or nil when that informer is not accounted.
func (f *Factory) meterFor(key registryKey, obj any) *meter {
	if f.cfg.noAccounting {
		return nil
	}
	if key.source == sourceTyped {
		key.typ = reflect.TypeOf(obj)
	}
	m, ok := f.meters.Load(key)
	if !ok {
		return nil
	}
	return m.(*meter)
}

// meter starts accounting for the new informer key; nil without accounting.
func (f *Factory) meter(key registryKey, name string, typ reflect.Type, sc scope, inf cache.SharedIndexInformer) *meter {
	if f.cfg.noAccounting {
		return nil
	}
	m := newMeter(name, sc.label(), len(inf.GetIndexer().GetIndexers()))
	m.typ = typ
	f.meters.Store(key, m)
	return m
}

// listenForMetersLocked is called before the factory starts informers:
// accounting needs every deletion, so an informer about to start without a
// handler of this package to ride on gets a listener of its own. (Adding one
// fails only on an informer already stopped, which has no deletions left to
// see.) f.mu is held.
func (f *Factory) listenForMetersLocked() {
	for _, inf := range f.informers {
		if err := inf.listenForMeter(); err != nil {
			f.report(fmt.Errorf("informer %s: memory accounting: %w", inf.Name(), err))
		}
	}
}

// unmeter stops accounting for informer key, which stopped.
func (f *Factory) unmeter(key registryKey) {
	f.meters.Delete(key)
}

// highCardinality are the resources that hold the most objects in a typical
// cluster: caching all of them cluster-wide is the usual cause of a
// controller's memory growing with the cluster.
var highCardinality = map[string]bool{"pods": true, "secrets": true, "configmaps": true, "events": true}

// warnUnscopedLocked logs, once per factory and resource, an informer of a
// high-cardinality resource that caches whole objects of every namespace
// with no selector. f.mu is held.
func (f *Factory) warnUnscopedLocked(key registryKey, name string, gvr schema.GroupVersionResource, sc scope) {
	if key.source == sourceMetadata || !highCardinality[gvr.Resource] ||
		(gvr.Group != "" && gvr.Group != "events.k8s.io") ||
		sc.narrowed() || f.cfg.namespace != "" || f.cfg.tweak != nil || f.warned[name] {
		return
	}
	if f.warned == nil {
		f.warned = map[string]bool{}
	}
	f.warned[name] = true
	f.logger.Info("Warning: informer caches every object of a high-cardinality resource in the cluster; "+
		"its memory grows with the cluster. Narrow it (InNamespaces, WithLabelSelector, WithFieldSelector, "+
		"or the factory's Options.Namespace) or cache metadata only (ForMetadata)", "informer", name)
}
