package workqueue

// ShutDown makes the queue ignore new items, wakes every waiting Get, drops the items waiting
// for a delay and stops the queue's goroutines before it returns. Items already ready are still
// handed out by Get; then Get reports shutdown. ShutDown also ends a ShutDownWithDrain that is
// waiting. Calling it more than once is fine.
func (q *Queue[T]) ShutDown() { q.shutDown(false) }

// ShutDownWithDrain is ShutDown that then waits until every item ready at the time has been
// handed out and every handed-out item is Done (client-go waits only for the latter). Workers
// must keep calling Get and Done, or it waits forever; ShutDown ends the wait.
func (q *Queue[T]) ShutDownWithDrain() { q.shutDown(true) }

// ShuttingDown reports whether ShutDown or ShutDownWithDrain has been called.
func (q *Queue[T]) ShuttingDown() bool { return q.down.Load() }

func (q *Queue[T]) shutDown(drain bool) {
	q.lock()
	if !q.shuttingDown {
		q.shuttingDown = true
		q.down.Store(true)
		q.dropDelayedLocked()
		q.flushRetiredLocked()
	}
	// Getters wait only while nothing is ready, so each of them can be told to quit.
	for w := q.waiters.pop(); w != nil; w = q.waiters.pop() {
		w.shutdown = true
		q.woken.push(w)
	}
	if drain {
		q.draining = true
	} else if q.draining {
		q.draining = false // ends the wait of ShutDownWithDrain
		q.drained.Broadcast()
	}
	q.unlock()

	q.stopOnce.Do(func() { close(q.stop) })

	if drain {
		q.lock()
		for q.draining && (q.queued > 0 || q.processing > 0) {
			q.drained.Wait()
		}
		q.unlock()
	}
	q.wg.Wait()
}
