package workqueue

import (
	"math"
	"time"

	"k8s.io/utils/clock"
)

// delayHeap is a 4-ary min-heap of ready times, ordered by time and, for equal times, by the
// order the waits began. The keys live in the heap array itself, so sifting compares without
// touching the entries: with many waiting items, chasing entry pointers dominated (see
// docs/design/workqueue.md).
// An entry is waiting while its slot's seq equals the entry's waitSeq; an earlier AddAfter of a
// waiting item pushes a new slot and leaves the old one stale, to be skipped when popped or
// dropped by a rebuild once stale slots are the majority.
//
// One goroutine (delayLoop) sleeps on one timer set to the root's ready time; there is never a
// goroutine or a timer per item.
type delayHeap[T comparable] struct {
	slots []delaySlot[T]
	stale int
}

type delaySlot[T comparable] struct {
	at  time.Duration
	seq uint64
	e   *entry[T]
}

func (s *delaySlot[T]) before(o *delaySlot[T]) bool {
	return s.at < o.at || s.at == o.at && s.seq < o.seq
}

func (s *delaySlot[T]) live() bool { return s.e.waiting && s.e.waitSeq == s.seq }

// len counts the slots, live or stale.
func (h *delayHeap[T]) len() int { return len(h.slots) }

func (h *delayHeap[T]) push(s delaySlot[T]) {
	h.slots = append(h.slots, s)
	h.up(len(h.slots) - 1)
}

// root returns the earliest slot; the heap must not be empty.
func (h *delayHeap[T]) root() *delaySlot[T] { return &h.slots[0] }

func (h *delayHeap[T]) pop() delaySlot[T] {
	n := len(h.slots) - 1
	s := h.slots[0]
	h.slots[0] = h.slots[n]
	h.slots[n] = delaySlot[T]{} // the array must not keep the entry reachable
	h.slots = h.slots[:n]
	if n > 1 {
		h.down(0)
	}
	return s
}

func (h *delayHeap[T]) up(i int) {
	s := h.slots[i]
	for i > 0 {
		p := (i - 1) / 4
		if !s.before(&h.slots[p]) {
			break
		}
		h.slots[i] = h.slots[p]
		i = p
	}
	h.slots[i] = s
}

func (h *delayHeap[T]) down(i int) {
	n := len(h.slots)
	s := h.slots[i]
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		best := c
		for j := c + 1; j < c+4 && j < n; j++ {
			if h.slots[j].before(&h.slots[best]) {
				best = j
			}
		}
		if !h.slots[best].before(&s) {
			break
		}
		h.slots[i] = h.slots[best]
		i = best
	}
	h.slots[i] = s
}

// abandon records that a slot became stale and rebuilds the heap without stale slots once they
// are the majority, so an item whose delay keeps getting shorter does not grow the heap.
func (h *delayHeap[T]) abandon() {
	h.stale++
	if h.stale < 1024 || 2*h.stale <= len(h.slots) {
		return
	}
	w := 0
	for _, s := range h.slots {
		if s.live() {
			h.slots[w] = s
			w++
		}
	}
	clear(h.slots[w:])
	h.slots, h.stale = h.slots[:w], 0
	for i := (w - 2) / 4; i >= 0; i-- {
		h.down(i)
	}
}

// now is the clock's time as a duration since the queue's epoch.
func (q *Queue[T]) now() time.Duration { return q.clock.Since(q.epoch) }

// deadline is the time d from now, saturating instead of overflowing for huge d.
func (q *Queue[T]) deadline(d time.Duration) time.Duration {
	now := q.now()
	if now > 0 && d > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + d
}

// delayLocked makes item (whose hash is h) wait until at (then it is added with priority prio). An item already
// waiting keeps the earlier ready time and the higher priority, unless it is held (AddOpts.Hold):
// then it keeps its held time, or its wake time (AddOpts.WakeAfter) if this add is the first to
// join the hold. With hold.on, the wait holds the item, unless it is ready already.
func (q *Queue[T]) delayLocked(item T, h uint64, at time.Duration, prio int, c *Cause, hold holding) {
	e := q.items.get(h, item)
	if e == nil {
		if e = q.newEntryLocked(item, h); e == nil {
			return
		}
	}
	if q.provenance {
		q.recordLocked(e, c, true)
	}
	if hold.on && e.state&stQueued == 0 {
		e.held = true
		q.setWakeLocked(e, hold.wakeAt)
	} else if e.held && at < e.readyAt {
		if prio > e.waitPrio {
			e.waitPrio = prio
		}
		q.wakeLocked(e)
		return
	}
	if e.waiting {
		if prio > e.waitPrio {
			e.waitPrio = prio
		}
		if at >= e.readyAt {
			return
		}
		q.delayed.abandon()
	} else {
		e.waiting, e.waitPrio = true, prio
	}
	q.waitUntilLocked(e, at)
}

// waitUntilLocked makes e, waiting, ready at at; its earlier slot in delayed, if any, must have
// been abandoned.
func (q *Queue[T]) waitUntilLocked(e *entry[T], at time.Duration) {
	e.readyAt = at
	q.waitSeq++
	e.waitSeq = q.waitSeq
	q.delayed.push(delaySlot[T]{at: at, seq: e.waitSeq, e: e})
	if r := q.delayed.root(); r.seq == e.waitSeq {
		q.wakeDelayLoopLocked()
	}
}

// setWakeLocked sets (wakeAt > 0) or clears the wake time of e's hold.
func (q *Queue[T]) setWakeLocked(e *entry[T], wakeAt time.Duration) {
	if wakeAt <= 0 {
		if q.wakes != nil {
			delete(q.wakes, e)
		}
		return
	}
	if q.wakes == nil {
		q.wakes = map[*entry[T]]time.Duration{}
	}
	q.wakes[e] = wakeAt
}

// wakeLocked is an add joining e's hold: the first one brings the end of the hold forward to
// its wake time (now, if that passed), when the hold has one and it comes sooner.
func (q *Queue[T]) wakeLocked(e *entry[T]) {
	w, ok := q.wakes[e]
	if !ok {
		return
	}
	delete(q.wakes, e)
	switch now := q.now(); {
	case w <= now:
		// Due already: handed out now, as a due wait is, not whenever the delay goroutine runs.
		q.delayed.abandon()
		q.endWaitLocked(e)
		if q.waiters.head != nil {
			q.dispatchLocked()
		}
	case w < e.readyAt:
		q.delayed.abandon()
		q.waitUntilLocked(e, w)
	}
}

// wakeDelayLoopLocked tells the delay goroutine that the earliest ready time changed, starting
// the goroutine on first use: a queue that never delays anything runs no goroutine.
func (q *Queue[T]) wakeDelayLoopLocked() {
	if !q.loopStarted {
		q.loopStarted = true
		q.wg.Add(1)
		go q.delayLoop()
		return
	}
	select {
	case q.kick <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// endWaitLocked adds e, whose wait ended, at the priority it waited with.
func (q *Queue[T]) endWaitLocked(e *entry[T]) {
	e.waiting, e.held = false, false
	if q.wakes != nil {
		delete(q.wakes, e)
	}
	if e.rec != nil {
		e.rec.ready.Merge(e.rec.waiting)
		e.rec.waiting = Record{}
	}
	q.readyLocked(e, e.waitPrio)
}

// promoteLocked adds every waiting entry whose ready time is not after now, earliest first.
func (q *Queue[T]) promoteLocked(now time.Duration) {
	for q.delayed.len() > 0 && q.delayed.root().at <= now {
		s := q.delayed.pop()
		if !s.live() {
			q.delayed.stale--
			continue
		}
		q.endWaitLocked(s.e)
	}
	if q.waiters.head != nil {
		q.dispatchLocked()
	}
}

// dropDelayedLocked forgets every waiting entry (at shutdown, as client-go does).
func (q *Queue[T]) dropDelayedLocked() {
	for _, s := range q.delayed.slots {
		if s.live() {
			s.e.waiting, s.e.held = false, false
			if s.e.rec != nil {
				s.e.rec.waiting = Record{}
			}
			if s.e.state == 0 {
				q.releaseLocked(s.e)
			}
		}
	}
	q.delayed = delayHeap[T]{}
	q.wakes = nil
}

// delayLoop is the one goroutine behind all delays. It is owned by the queue: ShutDown stops it
// and waits for it.
func (q *Queue[T]) delayLoop() {
	defer q.wg.Done()
	var t clock.Timer
	var fired <-chan time.Time
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		q.lock()
		if q.shuttingDown {
			q.unlock()
			return
		}
		now := q.now()
		q.promoteLocked(now)
		var next time.Duration
		waiting := q.delayed.len() > 0
		if waiting {
			next = q.delayed.root().at
		}
		q.unlock()

		if !waiting {
			stopTimer(t)
			fired = nil
		} else {
			wait := next - now
			if t == nil {
				t = q.clock.NewTimer(wait)
			} else {
				stopTimer(t)
				t.Reset(wait)
			}
			fired = t.C()
			// A fake clock can be stepped between Now and Reset; the timer then counts from the
			// new time. Looking again after arming catches a step past the deadline.
			if q.now() >= next {
				continue
			}
		}

		select {
		case <-q.stop:
			return
		case <-q.kick:
		case <-fired:
		}
	}
}

// stopTimer stops t and empties its channel, so a later Reset starts clean and a fake clock
// never blocks sending to a full channel.
func stopTimer(t clock.Timer) {
	if t == nil {
		return
	}
	if !t.Stop() {
		select {
		case <-t.C():
		default:
		}
	}
}
