package workqueue

// retireBatch is how many retired entries leave the table together (see retireLocked).
const retireBatch = 32

// retireLocked takes e, which Done left neither ready, processing nor waiting, out of the
// table, in batches: while the queue is busy, e's item is let go at once (the entry's copy is
// zeroed, and lookups skip a retired entry), but its slot stays in the table until retireBatch
// entries have gathered, and leaves with them. In a deep queue the table's slots are cache
// misses; a batch loads all of its slots before it changes any, so that the misses overlap
// instead of each stalling the lock's holder in turn. An add of the item meanwhile makes a new
// entry. When the queue is idle the entry leaves at once: nothing to batch with.
func (q *Queue[T]) retireLocked(e *entry[T]) {
	if q.processing == 0 && q.queued == 0 {
		if q.nRetired > 0 {
			q.flushRetiredLocked()
		}
		q.releaseLocked(e)
		return
	}
	q.items.retire(e) // its metrics and provenance records are cleared when the batch leaves
	e.retired = true
	q.retired[q.nRetired] = e
	q.nRetired++
	if q.nRetired == retireBatch {
		q.flushRetiredLocked()
	}
}

// flushRetiredLocked takes the retired entries out of the table.
func (q *Queue[T]) flushRetiredLocked() {
	rs := q.retired[:q.nRetired]
	var x uint64
	for _, e := range rs {
		x += q.items.peek(e.tag) // independent loads: their misses overlap
	}
	q.sink = x // keeps the loads
	for _, e := range rs {
		q.releaseLocked(e)
	}
	clear(rs)
	q.nRetired = 0
}

// releaseLocked forgets an entry that is neither ready, processing nor waiting. Its seq and
// waitSeq are kept: a stale slot may still point at it and must stay stale if the entry is
// reused.
func (q *Queue[T]) releaseLocked(e *entry[T]) {
	e.retired = false
	q.items.delete(e)
	var zero T
	e.item = zero
	e.state = 0
	if e.mx != nil {
		*e.mx = entryMetrics[T]{}
	}
	if e.rec != nil {
		*e.rec = provenance{}
	}
}
