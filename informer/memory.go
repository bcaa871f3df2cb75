package informer

import (
	"cmp"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"sync"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// empty with Options.DisableAccounting, and once the factory shut down. Informers taken from the client-go factory
// behind the factory (SharedInformerFactory) are not accounted.
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
	if f.table != nil && !f.cfg.noAccounting {
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
// them while it shares their sub-objects), keyed by UID (objects without a
// UID, from fake clients, by namespace/name). Deletions are settled when the
// meter is read, against the informer's store: no handler of its own, which
// would add a listener (a goroutine and two channel hops) to every event of
// the informer, when only deletions matter and the figures are read
// seldom (a scrape, a budget check, a probe).
type meter struct {
	resource, scope string
	typ             reflect.Type // the Go type the informer serves
	// storeBytes is what client-go's store and indexes spend per object,
	// besides its key.
	storeBytes int64
	// acct is a heap object of its own: the sharing table's cleanups hold it
	// for as long as a shared node lives, and a cleanup must not reach the
	// node through it (meter, store, cached object), or node and cache are
	// never freed.
	acct *hashcons.Account
	// store is the informer's cache, which settle compares the records with.
	store cache.Store

	mu         sync.Mutex
	objs       map[string]objectBytes
	own, full  int64
	namespaces map[string]*NamespaceMemory
	// changed: an object was recorded since the last settle (a deletion
	// passes through the transform too, as do a relist's objects); missing:
	// records the last settle kept though their objects were not in the store.
	changed bool
	missing int
	epoch   uint32 // of the last settle
}

// objectBytes is what one object takes, and what settle needs; 32 bits each
// keep the entry small (an object is far below 4 GiB).
type objectBytes struct {
	own, full uint32
	rv        uint64 // the object's resourceVersion; 0 when not a number
	// seen is the settle that last found the object in the store, missed
	// whether the last settle did not. namespaces are counted by settle.
	seen   uint32
	missed bool
}

func newMeter(resource, scope string, indexes int, store cache.Store) *meter {
	// Per object: its slot in the store's map (key and interface), its
	// entry in each index's set (a key), and its slot here (a UID and
	// objectBytes).
	slot := hashcons.MapEntryBytes(16 + unsafe.Sizeof(objectBytes{}))
	st := hashcons.MapEntryBytes(32) + int64(indexes)*hashcons.MapEntryBytes(16) + slot
	return &meter{resource: resource, scope: scope, storeBytes: st, store: store, acct: new(hashcons.Account),
		objs: map[string]objectBytes{}, namespaces: map[string]*NamespaceMemory{}}
}

// account is where the sharing table charges the meter's shared nodes.
func (m *meter) account() *hashcons.Account {
	if m == nil {
		return nil
	}
	return m.acct
}

// meterKey is the key of obj's record: its UID, or namespace/name without one.
func meterKey(o metav1.Object) string {
	if uid := o.GetUID(); uid != "" {
		return string(uid)
	}
	return cacheKey(o.GetNamespace(), o.GetName())
}

// set records obj, of the given sizes, entering the cache, replacing its
// previous version.
func (m *meter) set(obj any, sz hashcons.Sizes) {
	o, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	key := meterKey(o)
	rv, _ := strconv.ParseUint(o.GetResourceVersion(), 10, 64)
	store := hashcons.StringBytes(len(o.GetNamespace())+len(o.GetName())+1) + m.storeBytes
	b := objectBytes{own: clamp32(sz.Own + store), full: clamp32(sz.Full + store), rv: rv}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.changed = true
	prev := m.objs[key]
	b.seen = prev.seen
	m.objs[key] = b
	if prev.missed {
		m.missing--
	}
	m.own += int64(b.own) - int64(prev.own)
	m.full += int64(b.full) - int64(prev.full)
}

func clamp32(n int64) uint32 {
	return uint32(min(max(n, 0), 1<<32-1))
}

// settleLocked forgets the records of objects that left the store. A record
// whose object is not in the store is of a deleted object, or of one whose
// add the store has still to apply (the transform runs when an event is
// queued, the store is written when it is processed): it is forgotten once
// the store is past the object's resourceVersion or, when they cannot be
// compared (resourceVersions that are not numbers, a store of several
// informers with no common one), when the settle before missed it too.
// m.mu is held.
func (m *meter) settleLocked() {
	if m.store == nil || (!m.changed && m.missing == 0) {
		return
	}
	m.changed, m.missing = false, 0
	m.epoch++
	storeRV, err := strconv.ParseUint(m.store.LastStoreSyncResourceVersion(), 10, 64)
	applied := err == nil
	// The namespaces' figures are counted again on the way.
	for _, n := range m.namespaces {
		n.Objects, n.Bytes = 0, 0
	}
	for _, obj := range m.store.List() {
		o, err := meta.Accessor(obj)
		if err != nil {
			continue
		}
		key := meterKey(o)
		b, ok := m.objs[key]
		if !ok {
			continue
		}
		b.seen, b.missed = m.epoch, false
		m.objs[key] = b
		if ns := o.GetNamespace(); ns != "" {
			n := m.namespaces[ns]
			if n == nil {
				n = &NamespaceMemory{Namespace: ns}
				m.namespaces[ns] = n
			}
			n.Objects++
			n.Bytes += int64(b.own)
		}
	}
	for ns, n := range m.namespaces {
		if n.Objects == 0 {
			delete(m.namespaces, ns)
		}
	}
	for key, b := range m.objs {
		if b.seen == m.epoch {
			continue
		}
		gone := b.missed
		if applied && b.rv != 0 {
			gone = b.rv <= storeRV
		}
		if gone {
			m.forgetLocked(key, b)
			continue
		}
		b.missed = true
		m.objs[key] = b
		m.missing++
	}
}

// forgetLocked drops the record key of an object that left the cache.
func (m *meter) forgetLocked(key string, b objectBytes) {
	delete(m.objs, key)
	m.own -= int64(b.own)
	m.full -= int64(b.full)
}

// bytes is the Bytes of the meter's informer.
func (m *meter) bytes() int64 {
	shared := m.acct.Shared()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.settleLocked()
	return m.own + shared
}

func (m *meter) snapshot() InformerMemory {
	shared := m.acct.Shared()
	m.mu.Lock()
	m.settleLocked()
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

// meter starts accounting for the new informer key, whose cache is inf's
// store.
func (f *Factory) meter(key registryKey, name string, typ reflect.Type, sc scope, inf cache.SharedIndexInformer) {
	if f.cfg.noAccounting {
		return
	}
	idx := inf.GetIndexer()
	m := newMeter(name, sc.label(), len(idx.GetIndexers()), idx)
	m.typ = typ
	f.meters.Store(key, m)
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
