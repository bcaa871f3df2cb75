package workqueue

// Get blocks until it can hand out an item, the highest priority first and the oldest first
// within a priority. The caller owns the item until it calls Done; no other caller gets it
// meanwhile. After ShutDown, Get still hands out the items that are ready and then reports
// shutdown = true. Workers should keep calling Get until it does.
func (q *Queue[T]) Get() (item T, shutdown bool) { return q.get(nil) }

// get is Get that, when rec is not nil, also sets *rec to the item's record.
func (q *Queue[T]) get(rec *Record) (item T, shutdown bool) {
	q.lock()
	if e := q.tryTakeLocked(rec); e != nil {
		item = e.item
		q.unlock()
		return item, false
	}
	if q.shuttingDown {
		q.unlock()
		return item, true
	}
	// Nothing is ready, so the retired entries need not wait for a full batch.
	if q.nRetired > 0 {
		q.flushRetiredLocked()
	}
	// Wait for an item to be handed over directly (see dispatchLocked): the waker does the
	// bookkeeping under its lock, so a woken getter need not take the lock again.
	w := q.waiterPool.Get().(*waiter[T])
	q.waiters.push(w)
	q.unlock()
	<-w.ch
	item, shutdown = w.item, w.shutdown
	if rec != nil {
		*rec = w.rec
	}
	var zero T
	w.item, w.shutdown = zero, false
	if q.provenance {
		w.rec = Record{}
	}
	q.waiterPool.Put(w)
	return item, shutdown
}

// tryTakeLocked hands out the next ready item, as takeLocked, or returns nil when none is ready.
func (q *Queue[T]) tryTakeLocked(rec *Record) *entry[T] {
	if q.queued == 0 && q.delayed.len() > 0 {
		// Rather than wait, hand out an item whose delay has passed even if the delay
		// goroutine has not woken yet (a fake clock stepped by a test takes effect at once).
		// With items ready the clock is not read: reading it is the dearest step of a Get on
		// some machines, and the delay goroutine adds due items promptly anyway.
		q.promoteLocked(q.now())
	}
	if q.queued == 0 {
		return nil
	}
	return q.takeLocked(rec)
}

// Done marks item as processed. If it was added again while it was processed, it is queued
// again now. Done of an item that is not being processed does nothing.
func (q *Queue[T]) Done(item T) {
	h := q.items.hash(item)
	q.lock()
	q.doneLocked(item, h)
	q.unlock()
}

// DoneAndTryGet is Done(item) followed, in the same critical section, by a Get that does not
// wait: a worker loop hands back its item and takes the next one with one lock hand-off
// instead of two. ok is false when nothing is ready (or the queue is shut down and empty);
// the worker then calls Get to wait.
func (q *Queue[T]) DoneAndTryGet(item T) (next T, ok bool) { return q.doneAndTryGet(item, nil) }

// doneAndTryGet is DoneAndTryGet that, when rec is not nil, also sets *rec to the next item's
// record.
func (q *Queue[T]) doneAndTryGet(item T, rec *Record) (next T, ok bool) {
	h := q.items.hash(item)
	q.lock()
	q.doneLocked(item, h)
	if e := q.tryTakeLocked(rec); e != nil {
		next, ok = e.item, true
	}
	q.unlock()
	return next, ok
}

// doneLocked is Done of item, whose hash is h.
func (q *Queue[T]) doneLocked(item T, h uint64) {
	tag := tagOf(h)
	e := q.handed[tag&(handedSize-1)]
	if e != nil && e.tag == tag && e.item == item && e.state&stProcessing != 0 {
		q.handed[tag&(handedSize-1)] = nil
	} else if e = q.items.get(h, item); e == nil || e.state&stProcessing == 0 {
		return
	}
	q.processing--
	if q.metrics != nil {
		q.metrics.finished(e)
	}
	if e.state&stDirty != 0 && e.held {
		// Added again while being processed, and held since: the re-add waits with the hold.
		e.state = 0
		e.waitPrio = max(e.waitPrio, e.prio)
		if e.rec != nil {
			e.rec.waiting.Merge(e.rec.ready)
			e.rec.ready = Record{}
		}
		q.wakeLocked(e)
	} else if e.state&stDirty != 0 {
		e.state = 0
		q.enqueueLocked(e, e.prio)
		if q.waiters.head != nil {
			q.dispatchLocked()
		}
	} else {
		e.state = 0
		if !e.waiting {
			q.retireLocked(e)
		}
	}
	if q.draining && q.processing == 0 && q.queued == 0 {
		q.drained.Broadcast()
	}
}

// takeLocked pops the next ready entry and marks it processing, moving its record (if any) to
// rec when rec is not nil. q.queued must be > 0.
func (q *Queue[T]) takeLocked(rec *Record) *entry[T] {
	e := q.ready.pop()
	if e.rec != nil {
		if rec != nil {
			*rec = e.rec.ready
		}
		e.rec.ready = Record{}
	}
	q.queued--
	e.state = stProcessing
	q.processing++
	q.handed[e.tag&(handedSize-1)] = e
	if q.metrics != nil {
		q.metrics.started(e)
	}
	return e
}

// dispatchLocked hands ready entries straight to waiting getters, oldest getter first. The
// getters are woken by unlock, after the lock is released, so that the lock is not held while
// the scheduler readies them.
func (q *Queue[T]) dispatchLocked() {
	for q.queued > 0 {
		w := q.waiters.pop()
		if w == nil {
			return
		}
		w.item = q.takeLocked(&w.rec).item
		q.woken.push(w)
	}
}

// handedSize is the number of slots of Queue.handed: a power of two, indexed by a tag's low bits.
const handedSize = 64
