package workqueue

import "time"

// Aging (WithAging): an item that waited at a priority below the highest one with ready items
// for longer than the bound is moved to the back of that highest priority, so that a steady
// stream of higher-priority items cannot starve it.
//
// No item carries a time: reading the clock on every add would cost more than the rest of the
// add. Time is cut into ticks of a quarter of the bound instead, and at each tick every ring with
// items records its position (ring.base+ring.n, how many slots were ever pushed to it) in marks,
// one per tick for the last ageMarks ticks. A ring is FIFO, so the items pushed before tick k are
// exactly those in front of the mark of tick k. At tick k the items in front of the mark of tick
// k-4 are promoted: they waited at least four ticks (the bound) and less than five.
//
// The ticks are counted from the queue's clock, so a sweep that runs late (the goroutine was not
// scheduled, or a test stepped a fake clock) records every tick it missed with the marks of now:
// items pushed after a missed tick then count as older than they are by at most that lateness.

// ageMarks is how many ticks' marks a ring keeps: the bound is ageMarks-1 ticks.
const ageMarks = 5

// catchUpLocked promotes the delayed items due by now, then ages (with WithAging): in that
// order, so that an item due before a tick counts as pushed before it whether Len or the aging
// goroutine gets there first.
func (q *Queue[T]) catchUpLocked(now time.Duration) {
	q.promoteLocked(now)
	if q.agePeriod > 0 {
		q.ageLocked(now)
	}
}

// ageLocked records the marks of every tick up to now and promotes the items that aged.
func (q *Queue[T]) ageLocked(now time.Duration) {
	ls := &q.ready
	tick := int64(now / q.agePeriod)
	if tick <= ls.ageTick {
		return
	}
	from := max(ls.ageTick+1, tick-ageMarks+1)
	ls.ageTick = tick
	for _, l := range ls.active {
		if ls.flowOf == nil {
			l.mark(from, tick)
			continue
		}
		for f := l.rot.front; f != nil; f = f.next {
			f.mark(from, tick)
		}
	}
	if tick < ageMarks {
		return // no mark is old enough yet
	}
	top := len(ls.active) - 1
	for top >= 0 && !ls.live(ls.active[top]) {
		top-- // stale slots only
	}
	if top <= 0 {
		return
	}
	to, k := ls.active[top].prio, (tick-ageMarks+1)%ageMarks
	// From the highest priority down; removing active[i] leaves active[:i] in place.
	for i := top - 1; i >= 0; i-- {
		l := ls.active[i]
		if ls.flowOf == nil {
			q.promoteAgedLocked(&l.ring, l.marks[k], to)
			if l.n == 0 {
				ls.deactivate(i)
			}
			continue
		}
		for f := l.rot.front; f != nil; {
			next := f.next
			f.live -= q.promoteAgedLocked(&f.ring, f.marks[k], to)
			if f.live == 0 {
				ls.rest(l, f)
			}
			f = next
		}
		if l.rot.front == nil {
			ls.deactivate(i)
		}
	}
}

// mark records r's position as the mark of ticks from..to.
func (r *ring[T]) mark(from, to int64) {
	for t := from; t <= to; t++ {
		r.marks[t%ageMarks] = r.base + uint64(r.n)
	}
}

// promoteAgedLocked moves the live items of r in front of position end to the back of priority
// to, and returns how many it moved.
func (q *Queue[T]) promoteAgedLocked(r *ring[T], end uint64, to int) int {
	moved := 0
	for r.n > 0 && r.base < end {
		s := r.popFront()
		if !s.live() {
			r.stale--
			continue
		}
		e := s.e
		old := e.prio
		e.prio = to
		e.seq++
		q.ready.push(e)
		if q.metrics != nil {
			q.metrics.reprioritized(e, old)
		}
		moved++
	}
	return moved
}
