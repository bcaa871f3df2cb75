//go:build !wqmap

package workqueue

import (
	"hash/maphash"
	"math/bits"
	"sync/atomic"
)

// table maps items to their entries: open addressing with linear probing and backward-shift
// deletion (no tombstones). A slot is 8 bytes, tag<<32 | index: the tag is the high 32 bits of
// the item's hash (never 0, so 0 is an empty slot) and the index is the entry's in the arena,
// which the table owns. Slots hold no pointers, so the collector does not scan the slot array.
//
// It replaces a Go map so that the hash is computed before the queue's lock is taken (hash only
// reads the immutable seed): under contention every nanosecond inside the lock is paid by every
// waiting goroutine. A slot's position comes from the top bits of its tag, so neither a resize
// nor a deletion needs an entry's hash or the entry itself; the entry stores its tag so that
// removing it starts at the right slot.
type table[T comparable] struct {
	seed  maphash.Seed
	slots []uint64 // len is 0 or a power of two
	shift uint8    // 32 - log2(len(slots)): a slot's home is tag >> shift
	n     int
	// view is slots as of the last resize, for touch, which runs without the queue's lock.
	view  atomic.Pointer[[]uint64]
	arena arena[T]
}

const (
	minTable = 16
	// keepTable is the capacity a table keeps however empty it gets; above it the table halves
	// when less than 1/16 full (it doubles at 3/4), so a steady load never reallocates.
	keepTable = 4096
)

func newTable[T comparable]() table[T] {
	return table[T]{seed: maphash.MakeSeed(), arena: newArena[T]()}
}

// hash may be called without the queue's lock.
func (t *table[T]) hash(item T) uint64 { return maphash.Comparable(t.seed, item) }

// touch reads the slot where a lookup of hash h starts, without the queue's lock, and returns
// what it read (callers ignore it). Called before taking the lock, it brings the slot's cache
// line in while the caller may still wait for the lock, rather than while it holds it and every
// other caller waits. The slot may be stale by the time the lock is held; that costs a miss,
// never a wrong answer.
func (t *table[T]) touch(h uint64) uint64 {
	v := t.view.Load()
	if v == nil {
		return 0
	}
	sl := *v
	shift := 33 - bits.Len(uint(len(sl)))
	return atomic.LoadUint64(&sl[tagOf(h)>>shift])
}

// retire lets go of e's item while e keeps its slot until delete: lookups skip e from here on
// (get checks entry.retired, which the caller sets), and delete finds e's slot by tag and index.
func (t *table[T]) retire(e *entry[T]) {
	var zero T
	e.item = zero
}

// peek loads the slot where tag's probe run starts (under the queue's lock).
func (t *table[T]) peek(tag uint32) uint64 { return t.slots[tag>>t.shift] }

func (t *table[T]) len() int { return t.n }

// get returns the entry of item, whose hash is h, or nil.
func (t *table[T]) get(h uint64, item T) *entry[T] {
	if t.n == 0 {
		return nil
	}
	tag := tagOf(h)
	mask := uint64(len(t.slots) - 1)
	for i := uint64(tag >> t.shift); ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return nil
		}
		if uint32(s>>32) == tag {
			if e := t.arena.at(uint32(s)); e.item == item && !e.retired {
				return e
			}
		}
	}
}

// insert adds an entry for item, whose hash is h and which is not in the table, and returns
// it; nil when the queue already holds maxEntries items.
func (t *table[T]) insert(item T, h uint64) *entry[T] {
	e := t.arena.alloc()
	if e == nil {
		return nil
	}
	if 4*(t.n+1) > 3*len(t.slots) {
		t.resize(max(minTable, 2*len(t.slots)))
	}
	tag := tagOf(h)
	e.item, e.tag = item, tag
	atomic.StoreUint64(&t.slots[t.free(tag)], uint64(tag)<<32|uint64(e.idx))
	t.n++
	return e
}

// free returns the first empty slot of tag's probe run.
func (t *table[T]) free(tag uint32) uint64 {
	mask := uint64(len(t.slots) - 1)
	i := uint64(tag >> t.shift)
	for t.slots[i] != 0 {
		i = (i + 1) & mask
	}
	return i
}

// delete removes e, which must be in the table, and gives it back to the arena; the caller
// has cleared what must not stay reachable.
func (t *table[T]) delete(e *entry[T]) {
	mask := uint64(len(t.slots) - 1)
	want := uint64(e.tag)<<32 | uint64(e.idx)
	i := uint64(e.tag >> t.shift)
	for t.slots[i] != want {
		i = (i + 1) & mask
	}
	// Backward shift: move later slots of the probe run into the hole unless their home
	// position lies cyclically in (hole, slot], where moving them would break their run.
	for j := i; ; {
		j = (j + 1) & mask
		s := t.slots[j]
		if s == 0 {
			break
		}
		home := uint64(uint32(s>>32) >> t.shift)
		if (j-home)&mask < (j-i)&mask {
			continue
		}
		atomic.StoreUint64(&t.slots[i], s)
		i = j
	}
	atomic.StoreUint64(&t.slots[i], 0)
	t.n--
	t.arena.release(e)
	if len(t.slots) > keepTable && 16*t.n < len(t.slots) {
		t.resize(len(t.slots) / 2)
	}
}

func (t *table[T]) resize(size int) {
	old := t.slots
	t.slots = make([]uint64, size)
	t.shift = uint8(33 - bits.Len(uint(size)))
	for _, s := range old {
		if s != 0 {
			// Plain stores: touch cannot see the new slots before view is stored below.
			t.slots[t.free(uint32(s>>32))] = s
		}
	}
	view := t.slots
	t.view.Store(&view)
}

// all calls f for every entry (tests only).
func (t *table[T]) all(f func(*entry[T])) {
	for _, s := range t.slots {
		if s != 0 {
			f(t.arena.at(uint32(s)))
		}
	}
}
