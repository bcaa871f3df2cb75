package hashcons

import (
	"hash/maphash"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"
)

// Table holds the canonical sub-objects of the objects shared into it. Safe
// for concurrent use. The zero value is not usable: call New.
type Table struct {
	seed   maphash.Seed
	filter []atomic.Uint64 // lossy "seen once" set of hashes, 2-way (see seen)
	shift  uint            // 64 - log2(len(filter))
	mask   uint64          // applied to node hashes; tests narrow it to force collisions
	plans  *planner        // per-type plans, for the quantity layout in force

	mu      sync.Mutex
	entries map[uint64]*entry // by content hash; chained on collision
	count   int

	remove func(*entry)  // t.removeEntry, bound once
	serial atomic.Uint64 // numbers the objects shared
}

// entry is one canonical node.
type entry struct {
	wp   weak.Pointer[byte] // the pointer target, array, or map header
	pl   *plan              // the pointer, slice or map type
	n    int                // slice length
	h    uint64
	next *entry
	acct *Account // charged size bytes while the node lives; nil when none
	size int64
}

const filterBits = 14 // 16 Ki hashes, 128 KiB per Table

// New returns an empty Table.
func New() *Table {
	return newTable(quantityLayoutOnce())
}

// newTable returns a Table whose plans assume layout for resource.Quantity;
// tests force the fallback through it.
func newTable(layout quantityLayout) *Table {
	t := &Table{
		seed:    maphash.MakeSeed(),
		filter:  make([]atomic.Uint64, 1<<filterBits),
		shift:   64 - filterBits,
		mask:    ^uint64(0),
		entries: map[uint64]*entry{},
		plans:   plannerFor(layout),
	}
	t.remove = t.removeEntry
	return t
}

// Share canonicalises obj, a pointer to a struct (an API object), in place:
// the sub-objects it holds may afterwards be shared with other objects shared
// into t. obj's own struct stays the caller's. Other values are left alone
// (and sized by reflection).
//
// It returns obj's sizes, and charges acct (when not nil) the canonical
// nodes obj brought into t, for as long as they live.
func (t *Table) Share(obj any, acct *Account) Sizes {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Type().Elem().Kind() != reflect.Struct {
		n := Size(obj)
		return Sizes{Own: n, Full: n}
	}
	pl := t.plans.planFor(v.Type().Elem())
	p := v.UnsafePointer()
	root := allocSize(pl.size, pl.scan)
	w := &walk{Table: t, obj: t.serial.Add(1), acct: acct, own: root, full: root}
	w.visit(pl, p)
	w.own += w.internInline(pl, p)
	runtime.KeepAlive(obj)
	return Sizes{Own: int64(w.own), Full: int64(w.full)}
}

// len reports the number of canonical nodes in the table, live or awaiting
// their cleanup.
func (t *Table) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.count
}

// seen reports whether h was recorded before, and records it. The filter
// is 2-way: a slot pair holds the latest hash and the one before, so two
// hashes that share a pair and alternate (two nodes of every object of a
// kind) are both remembered.
func (t *Table) seen(h uint64) bool {
	h &= t.mask
	i := (h >> t.shift) &^ 1
	recent, older := &t.filter[i], &t.filter[i+1]
	r := recent.Load()
	if r == h || older.Load() == h {
		return true
	}
	older.Store(r)
	recent.Store(h)
	return false
}

func (t *Table) lookup(h uint64, pl *plan, n int, cand unsafe.Pointer) unsafe.Pointer {
	h &= t.mask
	t.mu.Lock()
	defer t.mu.Unlock()
	for e := t.entries[h]; e != nil; e = e.next {
		if e.pl != pl || e.n != n {
			continue
		}
		c := unsafe.Pointer(e.wp.Value())
		if c != nil && t.nodeEqual(pl, n, c, cand) {
			return c
		}
	}
	return nil
}

// register admits the canonical node c of size bytes, charged to the walk's
// account.
func (w *walk) register(h uint64, pl *plan, n int, c unsafe.Pointer, size uintptr) {
	t := w.Table
	h &= t.mask
	e := &entry{wp: weak.Make((*byte)(c)), pl: pl, n: n, h: h, acct: w.acct, size: int64(size)}
	if e.acct != nil {
		e.acct.shared.Add(e.size)
		e.acct.nodes.Add(1)
	}
	t.mu.Lock()
	e.next = t.entries[h]
	t.entries[h] = e
	t.count++
	t.mu.Unlock()
	runtime.AddCleanup((*byte)(c), t.remove, e)
}

func (t *Table) removeEntry(e *entry) {
	if e.acct != nil {
		e.acct.shared.Add(-e.size)
		e.acct.nodes.Add(-1)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	link := t.entries[e.h]
	if link == e {
		if e.next == nil {
			delete(t.entries, e.h)
		} else {
			t.entries[e.h] = e.next
		}
		t.count--
		return
	}
	for prev := link; prev != nil; prev = prev.next {
		if prev.next == e {
			prev.next = e.next
			t.count--
			return
		}
	}
}

// allocNode allocates room for n values of typ. Small pointer-free nodes are
// rounded up past the tiny allocator, which batches them into shared blocks
// that would keep dead entries in the table.
func allocNode(typ reflect.Type, size uintptr, n int) unsafe.Pointer {
	total := size * uintptr(n)
	if total < 16 && pointerFree(typ) {
		return unsafe.Pointer(new([2]uint64))
	}
	if n == 1 {
		return reflect.New(typ).UnsafePointer()
	}
	return reflect.MakeSlice(reflect.SliceOf(typ), n, n).UnsafePointer()
}

// nodeSize is what allocNode allocates for n values of typ.
func nodeSize(typ reflect.Type, size uintptr, n int, scan bool) uintptr {
	if total := size * uintptr(n); total < 16 && !scan {
		return 16
	}
	return allocSize(size*uintptr(n), scan)
}

func pointerFree(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	case reflect.Array:
		return t.Len() == 0 || pointerFree(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !pointerFree(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}
