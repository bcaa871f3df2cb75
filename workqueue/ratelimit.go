package workqueue

// AddRateLimited adds item after the delay the rate limiter gives it.
func (q *Queue[T]) AddRateLimited(item T) {
	if q.down.Load() {
		return
	}
	q.addAfter(item, q.limiter.When(item), 0, nil, false, 0)
}

// Forget tells the rate limiter to stop tracking item (its backoff starts over). It does not
// remove the item from the queue; the worker still calls Done.
func (q *Queue[T]) Forget(item T) { q.limiter.Forget(item) }

// NumRequeues reports how many times the rate limiter has delayed item since it was forgotten.
func (q *Queue[T]) NumRequeues(item T) int { return q.limiter.NumRequeues(item) }
