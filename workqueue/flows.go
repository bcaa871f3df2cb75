package workqueue

// Flows (WithFlows): inside each priority, every flow with ready items has a ring of its own,
// and the flows take turns in a rotation. A flow joins the back of the rotation when it gets its
// first ready item at that priority, and leaves when it has none; at its turn it hands out up to
// its weight of items (WithFlowWeights), oldest first, then goes to the back. One tenant's burst
// therefore delays another tenant's first item by at most one turn of every flow, not by the
// burst.
//
// A flow that empties leaves the rotation but stays known, idle, so that a flow whose items come
// one at a time is not hashed into and out of the map on every item. Past keepIdle idle flows
// in a priority, the longest idle one is forgotten and its structures go to a free list, so flows
// that come and go (one per namespace, say) allocate nothing in steady state.

// flowSet is a level's flows: those with live items in their rotation, the others idle.
type flowSet[T comparable] struct {
	flows    map[string]*flow[T] // every flow, in the rotation or idle
	rot      flowList[T]         // the flows with live items, in turn order
	idle     flowList[T]         // longest idle first
	nIdle    int
	lastFlow *flow[T] // the flow of the previous push, found without hashing
}

type flowList[T comparable] struct{ front, back *flow[T] }

type flow[T comparable] struct {
	ring[T]
	key        string
	live       int // live slots: the flow leaves the rotation when none is left
	credit     int // items left in this turn
	prev, next *flow[T]
}

const (
	// keepIdle bounds the idle flows a priority keeps.
	keepIdle = 256
	// keepFlows bounds the free list of flows.
	keepFlows = 1024
	// keepFlowRing is the largest ring an idle or freed flow keeps; a larger one is let go.
	keepFlowRing = 64
)

func (ls *levels[T]) weight(key string) int {
	if ls.weightOf == nil {
		return 1
	}
	return max(1, ls.weightOf(key))
}

// pushFlow appends e to the ring of its flow at level l.
func (ls *levels[T]) pushFlow(l *level[T], e *entry[T]) {
	key := ls.flowOf(e.item)
	f := l.flowNamed(key)
	if f == nil {
		f = ls.newFlow(l, key)
	}
	l.lastFlow = f
	if f.live == 0 {
		ls.wake(l, f)
	}
	f.push(slot[T]{e: e, seq: e.seq})
	f.live++
}

// flowNamed returns l's flow key, idle or not, or nil; the flow of the last push is found
// without hashing.
func (fs *flowSet[T]) flowNamed(key string) *flow[T] {
	if f := fs.lastFlow; f != nil && f.key == key {
		return f
	}
	return fs.flows[key]
}

// wake moves f, idle, to the back of l's rotation.
func (ls *levels[T]) wake(l *level[T], f *flow[T]) {
	l.idle.unlink(f)
	l.nIdle--
	f.credit = ls.weight(f.key)
	if l.rot.back == nil {
		ls.activate(l)
	}
	l.rot.pushBack(f)
}

// rest makes f, which has no live item left, idle: out of the rotation, its stale slots
// dropped, its ring let go if a burst grew it. Past keepIdle idle flows the longest idle one
// is forgotten. The caller deactivates l when its rotation is empty.
func (ls *levels[T]) rest(l *level[T], f *flow[T]) {
	for f.n > 0 {
		f.popFront()
	}
	f.stale = 0
	if len(f.buf) > keepFlowRing {
		f.buf = nil // a burst's ring is not kept idle; the next push makes a small one
	}
	l.rot.unlink(f)
	l.idle.pushBack(f)
	l.nIdle++
	if l.nIdle > keepIdle {
		ls.forget(l, l.idle.front)
	}
}

// newFlow adds flow key, idle, to l.
func (ls *levels[T]) newFlow(l *level[T], key string) *flow[T] {
	var f *flow[T]
	if n := len(ls.free); n > 0 {
		f = ls.free[n-1]
		ls.free[n-1] = nil
		ls.free = ls.free[:n-1]
	} else {
		f = &flow[T]{}
	}
	f.key = key
	if l.flows == nil {
		l.flows = make(map[string]*flow[T])
	}
	l.flows[key] = f
	l.idle.pushBack(f)
	l.nIdle++
	return f
}

// popFlow takes the next item of level l, which is active[i]: the oldest of the flow at the
// front of the rotation.
func (ls *levels[T]) popFlow(l *level[T], i int) *entry[T] {
	f := l.rot.front
	s := f.popFront()
	for !s.live() { // a flow in the rotation has a live slot
		f.stale--
		s = f.popFront()
	}
	f.live--
	switch {
	case f.live == 0:
		ls.rest(l, f)
		if l.rot.front == nil {
			ls.deactivate(i)
		}
	case f.credit > 1:
		f.credit--
	default:
		f.credit = ls.weight(f.key)
		if f != l.rot.back {
			r := &l.rot
			r.unlink(f)
			r.pushBack(f)
		}
	}
	return s.e
}

// abandonFlow records that e's slot in its flow at level l became stale.
func (ls *levels[T]) abandonFlow(l *level[T], e *entry[T]) {
	f := l.flowNamed(ls.flowOf(e.item))
	f.live--
	if f.live == 0 {
		ls.rest(l, f)
		if l.rot.front == nil {
			ls.deactivateLevel(l)
		}
		return
	}
	f.stale++
	if f.stale >= compactAt && 2*f.stale > f.n {
		f.compact()
	}
}

// forget takes f, idle, out of l and keeps its structures for reuse.
func (ls *levels[T]) forget(l *level[T], f *flow[T]) {
	l.idle.unlink(f)
	l.nIdle--
	delete(l.flows, f.key)
	if l.lastFlow == f {
		l.lastFlow = nil
	}
	if len(ls.free) >= keepFlows {
		return
	}
	buf := f.buf // rest emptied it and kept it only if small
	*f = flow[T]{}
	f.buf = buf
	ls.free = append(ls.free, f)
}

func (fl *flowList[T]) pushBack(f *flow[T]) {
	f.prev, f.next = fl.back, nil
	if fl.back == nil {
		fl.front = f
	} else {
		fl.back.next = f
	}
	fl.back = f
}

func (fl *flowList[T]) unlink(f *flow[T]) {
	if f.prev == nil {
		fl.front = f.next
	} else {
		f.prev.next = f.next
	}
	if f.next == nil {
		fl.back = f.prev
	} else {
		f.next.prev = f.prev
	}
	f.prev, f.next = nil, nil
}
