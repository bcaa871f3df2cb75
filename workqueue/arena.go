package workqueue

import "math/bits"

// arena holds the queue's entries in chunks of chunkSize, each entry addressed by a 32-bit
// index (chunk number, offset). The table's slots then hold an index instead of a pointer, so
// they are half the size and the collector does not scan them, and a burst allocates one chunk
// per chunkSize new keys instead of one object per key. Chunks never move, so the rest of the
// queue (rings, delay heap, metrics list) keeps plain *entry pointers into them.
//
// A new entry goes to the lowest-numbered chunk with a free entry, so after a burst the live
// entries gather in the low chunks and the high ones empty as their items finish; trailing
// chunks that are entirely free are then dropped (see trim), so the memory of a burst is given
// back once the items that were added last have left the queue.
type arena[T comparable] struct {
	chunks []*chunk[T]
	// cur is the lowest-numbered chunk with a free entry as of the last alloc, and curIdx its
	// number; a release into a lower chunk makes that one cur.
	cur    *chunk[T]
	curIdx int
	// hasFree has bit c set while chunks[c] may have a free entry: release sets it, and alloc
	// clears it when it finds the chunk full, so that the hot path of alloc need not.
	hasFree []uint64
	// low is a word of hasFree at or below its first non-zero word: where alloc starts looking.
	low int
	// n counts the entries handed out and not released.
	n int
	// limit bounds the entries, rounded up to whole chunks (maxEntries; lowered by tests).
	limit int
}

type chunk[T comparable] struct {
	e [chunkSize]entry[T]
	// free heads the list of released entries, linked through entry.next, as offset+1 (0: none).
	// The last released entry is reused first, as its cache lines are the likeliest to be warm.
	free uint32
	used uint32 // e[used:] were never handed out, so they need no list
	live uint32 // entries of this chunk handed out and not released
}

const (
	chunkBits = 8
	chunkSize = 1 << chunkBits
	// keepChunks is how many chunks the arena keeps however empty the queue gets (as many
	// entries as the free list of recycled entries kept before chunks).
	keepChunks = 4
	// maxEntries bounds the entries of one queue: indices are 32 bits, and the table, whose
	// slots' positions come from 32 hash bits, stays at most 2^32 slots.
	maxEntries = 1 << 31
)

func newArena[T comparable]() arena[T] { return arena[T]{limit: maxEntries, curIdx: -1} }

// at returns the entry at idx, which must have been handed out by alloc.
func (a *arena[T]) at(idx uint32) *entry[T] {
	return &a.chunks[idx>>chunkBits].e[idx&(chunkSize-1)]
}

// alloc hands out a free entry with its idx set and its other fields as its last release left
// them (seq and waitSeq must survive reuse: stale ring and heap slots may still point at it).
// It returns nil when the arena holds limit entries.
func (a *arena[T]) alloc() *entry[T] {
	// The steady state: reuse the entry released last into the current chunk.
	if ch := a.cur; ch != nil && ch.free != 0 {
		e := &ch.e[ch.free-1]
		ch.free = e.next
		ch.live++
		a.n++
		return e
	}
	return a.allocSlow()
}

func (a *arena[T]) allocSlow() *entry[T] {
	for w := a.low; w < len(a.hasFree); w++ {
		for a.hasFree[w] != 0 {
			c := w*64 + bits.TrailingZeros64(a.hasFree[w])
			if ch := a.chunks[c]; ch.free != 0 || ch.used < chunkSize {
				a.low, a.cur, a.curIdx = w, ch, c
				return a.take(ch, c)
			}
			a.hasFree[w] &^= 1 << (c % 64)
		}
	}
	// Every chunk is full.
	c := len(a.chunks)
	if c*chunkSize >= a.limit {
		return nil
	}
	ch := new(chunk[T])
	a.chunks = append(a.chunks, ch)
	w := c / 64
	if w == len(a.hasFree) {
		a.hasFree = append(a.hasFree, 0)
	}
	a.hasFree[w] |= 1 << (c % 64)
	a.low, a.cur, a.curIdx = w, ch, c
	return a.take(ch, c)
}

// take hands out a free entry of ch, the chunk numbered c.
func (a *arena[T]) take(ch *chunk[T], c int) *entry[T] {
	var e *entry[T]
	if ch.free != 0 {
		e = &ch.e[ch.free-1]
		ch.free = e.next
	} else {
		e = &ch.e[ch.used]
		e.idx = uint32(c)<<chunkBits | ch.used // kept from here on, through reuse
		ch.used++
	}
	ch.live++
	a.n++
	return e
}

// release takes back e, which alloc handed out; the caller has cleared what must not stay
// reachable.
func (a *arena[T]) release(e *entry[T]) {
	c := int(e.idx >> chunkBits)
	ch := a.chunks[c]
	e.next = ch.free
	ch.free = e.idx&(chunkSize-1) + 1
	ch.live--
	a.n--
	w := c / 64
	a.hasFree[w] |= 1 << (c % 64)
	a.low = min(a.low, w)
	if c < a.curIdx {
		a.cur, a.curIdx = ch, c
	}
	if ch.live == 0 && c >= keepChunks-1 {
		a.trim()
	}
}

// trim drops the trailing chunks that are entirely free, but keeps one of them as a spare (and
// keepChunks chunks in any case), so a queue whose depth swings around a chunk's boundary does
// not allocate a chunk on every swing. A dropped chunk may still be reachable from stale ring or
// heap slots until they are popped; its entries are all released, so those slots stay stale.
func (a *arena[T]) trim() {
	n := len(a.chunks)
	for n > keepChunks && a.chunks[n-1].live == 0 && a.chunks[n-2].live == 0 {
		n--
		a.chunks[n] = nil
		a.hasFree[n/64] &^= 1 << (n % 64)
		if n%64 == 0 {
			a.hasFree = a.hasFree[:n/64]
		}
	}
	if n == len(a.chunks) {
		return
	}
	a.chunks = a.chunks[:n]
	a.low = min(a.low, len(a.hasFree))
	if a.curIdx >= n {
		a.cur, a.curIdx = nil, -1
	}
	// Give back the directory too once it is mostly unused.
	if cap(a.chunks) > 64 && 4*n < cap(a.chunks) {
		a.chunks = append([]*chunk[T](nil), a.chunks...)
		a.hasFree = append([]uint64(nil), a.hasFree...)
	}
}
