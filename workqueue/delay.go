package workqueue

import (
	"time"

	"k8s.io/utils/clock"
)

// delayHeap is a binary min-heap of the waiting entries, ordered by ready time and, for equal
// times, by the order they started waiting. Each entry knows its index, so an earlier AddAfter of
// a waiting item moves it in O(log n). One goroutine (delayLoop) sleeps on one timer set to the
// root's ready time; there is never a goroutine or a timer per item.
type delayHeap[T comparable] []*entry[T]

func (h delayHeap[T]) less(i, j int) bool {
	a, b := h[i], h[j]
	if !a.readyAt.Equal(b.readyAt) {
		return a.readyAt.Before(b.readyAt)
	}
	return a.waitSeq < b.waitSeq
}

func (h delayHeap[T]) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = i
	h[j].heapIdx = j
}

func (h *delayHeap[T]) push(e *entry[T]) {
	e.heapIdx = len(*h)
	*h = append(*h, e)
	h.up(e.heapIdx)
}

func (h *delayHeap[T]) popMin() *entry[T] {
	old := *h
	n := len(old) - 1
	e := old[0]
	old.swap(0, n)
	old[n] = nil // the heap's array must not keep the entry reachable
	*h = old[:n]
	if n > 0 {
		h.down(0)
	}
	e.heapIdx = -1
	return e
}

func (h delayHeap[T]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h delayHeap[T]) down(i int) {
	n := len(h)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if r := c + 1; r < n && h.less(r, c) {
			c = r
		}
		if !h.less(c, i) {
			return
		}
		h.swap(i, c)
		i = c
	}
}

// delayLocked makes item wait until at (then it is added with priority prio). An item already
// waiting keeps the earlier ready time and the higher priority.
func (q *Queue[T]) delayLocked(item T, at time.Time, prio int) {
	e := q.items[item]
	if e == nil {
		e = q.newEntryLocked(item)
	}
	if e.heapIdx >= 0 {
		if prio > e.waitPrio {
			e.waitPrio = prio
		}
		if !at.Before(e.readyAt) {
			return
		}
		e.readyAt = at
		q.delayed.up(e.heapIdx)
	} else {
		e.readyAt, e.waitPrio = at, prio
		q.waitSeq++
		e.waitSeq = q.waitSeq
		q.delayed.push(e)
	}
	if e.heapIdx == 0 {
		q.wakeDelayLoopLocked()
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

// promoteLocked adds every waiting entry whose ready time is not after now, earliest first.
func (q *Queue[T]) promoteLocked(now time.Time) {
	for len(q.delayed) > 0 && !q.delayed[0].readyAt.After(now) {
		e := q.delayed.popMin()
		q.readyLocked(e, e.waitPrio)
	}
	if q.waiters.head != nil {
		q.dispatchLocked()
	}
}

// dropDelayedLocked forgets every waiting entry (at shutdown, as client-go does).
func (q *Queue[T]) dropDelayedLocked() {
	for i, e := range q.delayed {
		q.delayed[i] = nil
		e.heapIdx = -1
		if e.state == 0 {
			q.releaseLocked(e)
		}
	}
	q.delayed = nil
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
		q.mu.Lock()
		if q.shuttingDown {
			q.mu.Unlock()
			return
		}
		now := q.clock.Now()
		q.promoteLocked(now)
		var next time.Time
		waiting := len(q.delayed) > 0
		if waiting {
			next = q.delayed[0].readyAt
		}
		q.mu.Unlock()

		if !waiting {
			stopTimer(t)
			fired = nil
		} else {
			wait := next.Sub(now)
			if t == nil {
				t = q.clock.NewTimer(wait)
			} else {
				stopTimer(t)
				t.Reset(wait)
			}
			fired = t.C()
			// A fake clock can be stepped between Now and Reset; the timer then counts from the
			// new time. Looking again after arming catches a step past the deadline.
			if !q.clock.Now().Before(next) {
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
