package workqueue

// levels holds the ready items: one FIFO ring per priority, plus the ascending list of the
// priorities whose ring is not empty. Get takes from the last (highest) ring, so the common cases
// (one priority, or a handful) cost O(1) and allocate nothing once the rings have grown.
//
// Raising the priority of an item that is already ready does not search its old ring: the entry
// gets a new slot in the higher ring and a new sequence number, and the old slot becomes stale
// (its sequence number no longer matches). Stale slots are skipped when popped, and a ring with
// many of them is compacted, so memory stays proportional to the items actually queued.
type levels[T comparable] struct {
	// small holds the rings of priorities in [-smallOffset, smallOffset): the priorities people
	// use (controller-runtime's LowPriority is -100) are found without hashing.
	small  [2 * smallOffset]*level[T]
	byPrio map[int]*level[T] // the rings of other priorities
	last   *level[T]         // the byPrio ring of the previous lookup
	active []*level[T]       // ascending by prio; every member has n > 0
}

type level[T comparable] struct {
	prio  int
	buf   []slot[T] // a ring; len(buf) is a power of two
	head  int
	n     int // slots in use, live and stale
	stale int
}

type slot[T comparable] struct {
	e   *entry[T]
	seq uint64
}

const (
	minRing = 8
	// keepRing is the capacity a ring keeps however empty it gets; a larger ring halves when it
	// is less than 1/8 full. The gap between growing (full) and shrinking (1/8) keeps a queue
	// whose depth swings from empty to thousands from reallocating its ring on every swing.
	keepRing = 4096
	// smallOffset sets the range of priorities whose rings are kept in an array.
	smallOffset = 128
	// keepLevels bounds how many empty rings of other priorities are kept for reuse.
	keepLevels = 64
	// compactAt is the number of stale slots after which a ring is compacted when they are the
	// majority of its slots.
	compactAt = 32
)

func (s slot[T]) live() bool { return s.e.state&stQueued != 0 && s.e.seq == s.seq }

func (ls *levels[T]) ring(prio int) *level[T] {
	if i := uint(prio + smallOffset); i < uint(len(ls.small)) {
		l := ls.small[i]
		if l == nil {
			l = &level[T]{prio: prio, buf: make([]slot[T], minRing)}
			ls.small[i] = l
		}
		return l
	}
	if l := ls.last; l != nil && l.prio == prio {
		return l
	}
	l := ls.byPrio[prio]
	if l == nil {
		if ls.byPrio == nil {
			ls.byPrio = make(map[int]*level[T])
		}
		l = &level[T]{prio: prio, buf: make([]slot[T], minRing)}
		ls.byPrio[prio] = l
	}
	ls.last = l
	return l
}

// push appends e, whose prio and seq are already set, to the ring of e.prio.
func (ls *levels[T]) push(e *entry[T]) {
	l := ls.ring(e.prio)
	if l.n == 0 {
		ls.activate(l)
	}
	l.push(slot[T]{e: e, seq: e.seq})
}

// pop removes and returns the oldest live entry of the highest priority, or nil.
func (ls *levels[T]) pop() *entry[T] {
	for n := len(ls.active); n > 0; n = len(ls.active) {
		l := ls.active[n-1]
		for l.n > 0 {
			s := l.popFront()
			if s.live() {
				if l.n == 0 {
					ls.deactivate(n - 1)
				}
				return s.e
			}
			l.stale--
		}
		ls.deactivate(n - 1)
	}
	return nil
}

// abandon records that the live slot of an entry in ring prio became stale.
func (ls *levels[T]) abandon(prio int) {
	l := ls.ring(prio)
	l.stale++
	if l.stale >= compactAt && 2*l.stale > l.n {
		l.compact()
		if l.n == 0 {
			for i, a := range ls.active {
				if a == l {
					ls.deactivate(i)
					break
				}
			}
		}
	}
}

func (ls *levels[T]) activate(l *level[T]) {
	i := len(ls.active)
	for i > 0 && ls.active[i-1].prio > l.prio {
		i--
	}
	ls.active = append(ls.active, nil)
	copy(ls.active[i+1:], ls.active[i:])
	ls.active[i] = l
}

func (ls *levels[T]) deactivate(i int) {
	l := ls.active[i]
	copy(ls.active[i:], ls.active[i+1:])
	ls.active[len(ls.active)-1] = nil
	ls.active = ls.active[:len(ls.active)-1]
	// Keep a bounded number of idle rings so that a fixed set of priorities allocates nothing,
	// while a caller using ever new priorities does not grow the map without bound.
	if len(ls.byPrio) > keepLevels && ls.byPrio[l.prio] == l {
		delete(ls.byPrio, l.prio)
		if ls.last == l {
			ls.last = nil
		}
	}
}

func (l *level[T]) push(s slot[T]) {
	if l.n == len(l.buf) {
		l.resize(2 * len(l.buf))
	}
	l.buf[(l.head+l.n)&(len(l.buf)-1)] = s
	l.n++
}

func (l *level[T]) popFront() slot[T] {
	s := l.buf[l.head]
	l.buf[l.head] = slot[T]{} // the ring must not keep the entry (and its item) reachable
	l.head = (l.head + 1) & (len(l.buf) - 1)
	l.n--
	if len(l.buf) > keepRing && l.n < len(l.buf)/8 {
		l.resize(len(l.buf) / 2)
	}
	return s
}

func (l *level[T]) resize(size int) {
	buf := make([]slot[T], size)
	mask := len(l.buf) - 1
	for i := 0; i < l.n; i++ {
		buf[i] = l.buf[(l.head+i)&mask]
	}
	l.buf, l.head = buf, 0
}

// compact drops the stale slots, keeping the order of the live ones.
func (l *level[T]) compact() {
	mask := len(l.buf) - 1
	w := 0
	for r := 0; r < l.n; r++ {
		s := l.buf[(l.head+r)&mask]
		if s.live() {
			l.buf[(l.head+w)&mask] = s
			w++
		}
	}
	for i := w; i < l.n; i++ {
		l.buf[(l.head+i)&mask] = slot[T]{}
	}
	l.n, l.stale = w, 0
}
