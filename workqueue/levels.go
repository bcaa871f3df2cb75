package workqueue

// levels holds the ready items: one FIFO ring per priority, plus the ascending list of the
// priorities that have items. Get takes from the highest, so the common cases (one priority, or a
// handful) cost O(1) and allocate nothing once the rings have grown.
//
// With flows (WithFlows) a priority holds one ring per flow instead, and the flows with items take
// turns (flows.go): Get takes from the flow at the front of the highest priority's rotation.
//
// Raising the priority of an item that is already ready does not search its old ring: the entry
// gets a new slot in the higher ring and a new sequence number, and the old slot becomes stale
// (its sequence number no longer matches). Stale slots are skipped when popped, and a ring with
// many of them is compacted, so memory stays proportional to the items actually queued.
type levels[T comparable] struct {
	// small holds the levels of priorities in [-smallOffset, smallOffset): the priorities people
	// use (controller-runtime's LowPriority is -100) are found without hashing.
	small  [2 * smallOffset]*level[T]
	byPrio map[int]*level[T] // the levels of other priorities
	last   *level[T]         // the byPrio level of the previous lookup
	active []*level[T]       // ascending by prio; every member has slots (flows off) or flows

	flowOf   func(T) string   // nil: flows off
	weightOf func(string) int // nil: every flow takes one item a turn
	free     []*flow[T]       // flows that emptied, for reuse

	ageTick int64 // the last aging tick whose marks are recorded (aging.go)
}

// level is the ready items of one priority: its ring when flows are off, its flows when on.
type level[T comparable] struct {
	prio int
	ring[T]
	flowSet[T]
}

// ring is a FIFO of slots. base counts the slots ever taken from its front, so base+i is the
// position of the i-th slot among all slots pushed: aging marks positions, not times.
type ring[T comparable] struct {
	buf   []slot[T] // len is 0 or a power of two
	head  int
	n     int // slots in use, live and stale
	stale int
	base  uint64
	marks [ageMarks]uint64 // aging.go
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
	// smallOffset sets the range of priorities whose levels are kept in an array.
	smallOffset = 128
	// keepLevels bounds how many empty levels of other priorities are kept for reuse.
	keepLevels = 64
	// compactAt is the number of stale slots after which a ring is compacted when they are the
	// majority of its slots.
	compactAt = 32
)

func (s slot[T]) live() bool { return s.e.state&stQueued != 0 && s.e.seq == s.seq }

func (ls *levels[T]) level(prio int) *level[T] {
	if i := uint(prio + smallOffset); i < uint(len(ls.small)) {
		l := ls.small[i]
		if l == nil {
			l = &level[T]{prio: prio}
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
		l = &level[T]{prio: prio}
		ls.byPrio[prio] = l
	}
	ls.last = l
	return l
}

// push appends e, whose prio and seq are already set, to its priority's ring (or its flow's).
func (ls *levels[T]) push(e *entry[T]) {
	l := ls.level(e.prio)
	if ls.flowOf != nil {
		ls.pushFlow(l, e)
		return
	}
	if l.n == 0 {
		ls.activate(l)
	}
	l.push(slot[T]{e: e, seq: e.seq})
}

// pop removes and returns the oldest live entry of the highest priority (with flows, of the flow
// whose turn it is), or nil.
func (ls *levels[T]) pop() *entry[T] {
	for n := len(ls.active); n > 0; n = len(ls.active) {
		l := ls.active[n-1]
		if ls.flowOf != nil {
			return ls.popFlow(l, n-1)
		}
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

// abandon records that e's live slot in the ring of priority prio became stale; e is still
// queued (its priority was raised).
func (ls *levels[T]) abandon(e *entry[T], prio int) {
	l := ls.level(prio)
	if ls.flowOf != nil {
		ls.abandonFlow(l, e)
		return
	}
	l.stale++
	if l.stale >= compactAt && 2*l.stale > l.n {
		l.compact()
		if l.n == 0 {
			ls.deactivateLevel(l)
		}
	}
}

// live reports whether l holds a ready item (not only stale slots).
func (ls *levels[T]) live(l *level[T]) bool {
	if ls.flowOf != nil {
		return l.rot.front != nil
	}
	return l.n > l.stale
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

// deactivateLevel is deactivate of l, wherever it is in active.
func (ls *levels[T]) deactivateLevel(l *level[T]) {
	for i, a := range ls.active {
		if a == l {
			ls.deactivate(i)
			return
		}
	}
}

func (ls *levels[T]) deactivate(i int) {
	l := ls.active[i]
	copy(ls.active[i:], ls.active[i+1:])
	ls.active[len(ls.active)-1] = nil
	ls.active = ls.active[:len(ls.active)-1]
	// Keep a bounded number of idle levels so that a fixed set of priorities allocates nothing,
	// while a caller using ever new priorities does not grow the map without bound.
	if len(ls.byPrio) > keepLevels && ls.byPrio[l.prio] == l {
		delete(ls.byPrio, l.prio)
		if ls.last == l {
			ls.last = nil
		}
	}
}

func (r *ring[T]) push(s slot[T]) {
	if r.n == len(r.buf) {
		r.resize(max(minRing, 2*len(r.buf)))
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = s
	r.n++
}

func (r *ring[T]) popFront() slot[T] {
	s := r.buf[r.head]
	r.buf[r.head] = slot[T]{} // the ring must not keep the entry (and its item) reachable
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	r.base++
	if len(r.buf) > keepRing && r.n < len(r.buf)/8 {
		r.resize(len(r.buf) / 2)
	}
	return s
}

func (r *ring[T]) resize(size int) {
	buf := make([]slot[T], size)
	mask := len(r.buf) - 1
	for i := 0; i < r.n; i++ {
		buf[i] = r.buf[(r.head+i)&mask]
	}
	r.buf, r.head = buf, 0
}

// compact drops the stale slots, keeping the order of the live ones. Each aging mark is moved
// to count the live slots before it, so that it still splits the same items.
func (r *ring[T]) compact() {
	mask := len(r.buf) - 1
	old := r.marks
	w := 0
	for i := 0; i < r.n; i++ {
		for k, m := range old {
			if m == r.base+uint64(i) {
				r.marks[k] = r.base + uint64(w)
			}
		}
		s := r.buf[(r.head+i)&mask]
		if s.live() {
			r.buf[(r.head+w)&mask] = s
			w++
		}
	}
	for k, m := range old {
		if m >= r.base+uint64(r.n) {
			r.marks[k] = r.base + uint64(w)
		}
	}
	for i := w; i < r.n; i++ {
		r.buf[(r.head+i)&mask] = slot[T]{}
	}
	r.n, r.stale = w, 0
}
