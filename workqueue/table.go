//go:build !wqmap

package workqueue

import (
	"hash/maphash"
	"sync/atomic"
)

// table maps items to their entries: open addressing with linear probing and backward-shift
// deletion (no tombstones), 16-byte slots holding the item's hash and its entry.
//
// It replaces a Go map so that the hash is computed before the queue's lock is taken (hash only
// reads the immutable seed): under contention every nanosecond inside the lock is paid by every
// waiting goroutine. The entry stores its hash, so removing it needs no rehash.
type table[T comparable] struct {
	seed  maphash.Seed
	slots []tslot[T] // len is 0 or a power of two
	n     int
	// view is slots as of the last resize, for touch, which runs without the queue's lock.
	view atomic.Pointer[[]tslot[T]]
}

// A slot's h is written with atomic stores, so that touch may read it without the lock; e is
// only ever read under the lock.
type tslot[T comparable] struct {
	h uint64
	e *entry[T] // nil: empty
}

func (s *tslot[T]) set(o tslot[T]) {
	atomic.StoreUint64(&s.h, o.h)
	s.e = o.e
}

const (
	minTable = 16
	// keepTable is the capacity a table keeps however empty it gets; above it the table halves
	// when less than 1/16 full (it doubles at 3/4), so a steady load never reallocates.
	keepTable = 4096
)

func newTable[T comparable]() table[T] { return table[T]{seed: maphash.MakeSeed()} }

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
	return atomic.LoadUint64(&sl[h&uint64(len(sl)-1)].h)
}

func (t *table[T]) len() int { return t.n }

// get returns the entry of item, whose hash is h, or nil.
func (t *table[T]) get(h uint64, item T) *entry[T] {
	if t.n == 0 {
		return nil
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.e == nil {
			return nil
		}
		if s.h == h && s.e.item == item {
			return s.e
		}
	}
}

// put adds e, whose item is not in the table; e.h must be set.
func (t *table[T]) put(e *entry[T]) {
	if 4*(t.n+1) > 3*len(t.slots) {
		t.resize(max(minTable, 2*len(t.slots)))
	}
	t.place(tslot[T]{h: e.h, e: e})
	t.n++
}

func (t *table[T]) place(s tslot[T]) {
	t.slots[t.free(s.h)].set(s)
}

// free returns the first empty slot of h's probe run.
func (t *table[T]) free(h uint64) uint64 {
	mask := uint64(len(t.slots) - 1)
	i := h & mask
	for t.slots[i].e != nil {
		i = (i + 1) & mask
	}
	return i
}

// remove deletes e, which must be in the table.
func (t *table[T]) remove(e *entry[T]) {
	mask := uint64(len(t.slots) - 1)
	i := e.h & mask
	for t.slots[i].e != e {
		i = (i + 1) & mask
	}
	// Backward shift: move later slots of the probe run into the hole unless their home
	// position lies cyclically in (hole, slot], where moving them would break their run.
	for j := i; ; {
		j = (j + 1) & mask
		s := t.slots[j]
		if s.e == nil {
			break
		}
		home := s.h & mask
		if (j-home)&mask < (j-i)&mask {
			continue
		}
		t.slots[i].set(s)
		i = j
	}
	t.slots[i].set(tslot[T]{})
	t.n--
	if len(t.slots) > keepTable && 16*t.n < len(t.slots) {
		t.resize(len(t.slots) / 2)
	}
}

func (t *table[T]) resize(size int) {
	old := t.slots
	t.slots = make([]tslot[T], size)
	for _, s := range old {
		if s.e != nil {
			// Plain stores: touch cannot see the new slots before view is stored below.
			t.slots[t.free(s.h)] = s
		}
	}
	view := t.slots
	t.view.Store(&view)
}

// all calls f for every entry (tests only).
func (t *table[T]) all(f func(*entry[T])) {
	for _, s := range t.slots {
		if s.e != nil {
			f(s.e)
		}
	}
}
