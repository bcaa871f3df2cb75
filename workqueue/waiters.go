package workqueue

import "runtime"

// lock takes mu. When mu is held, it yields a few times before blocking: a goroutine parked on a
// contended sync.Mutex is woken through the runtime's semaphore, and with many goroutines per
// CPU (the local run queue is never empty, so sync.Mutex does not spin) the lock can fall into
// a convoy where every hand-over costs a context switch. Yielding lets the holder, or other
// work, run instead.
func (q *Queue[T]) lock() {
	if q.mu.TryLock() {
		return
	}
	for range lockYields {
		runtime.Gosched()
		if q.mu.TryLock() {
			return
		}
	}
	q.mu.Lock()
}

// lockYields is how often lock yields before it blocks.
const lockYields = 4

// unlock releases mu, then wakes the getters dispatchLocked handed items to.
func (q *Queue[T]) unlock() {
	w := q.woken.head
	if w == nil {
		q.mu.Unlock()
		return
	}
	q.woken = waiterList[T]{}
	q.mu.Unlock()
	for w != nil {
		next := w.next // read first: once woken, the getter recycles w
		w.next = nil
		w.ch <- struct{}{}
		w = next
	}
}

// waiter is a getter blocked in Get. The item is handed to it under the queue's lock.
type waiter[T comparable] struct {
	ch       chan struct{} // buffered 1: the waker never blocks
	item     T
	rec      Record // the item's record, on a queue with provenance
	shutdown bool
	next     *waiter[T]
}

// waiterList is a FIFO of blocked getters, so the longest waiting one is served first.
type waiterList[T comparable] struct {
	head, tail *waiter[T]
}

func (l *waiterList[T]) push(w *waiter[T]) {
	w.next = nil
	if l.tail == nil {
		l.head = w
	} else {
		l.tail.next = w
	}
	l.tail = w
}

func (l *waiterList[T]) pop() *waiter[T] {
	w := l.head
	if w == nil {
		return nil
	}
	l.head = w.next
	if l.head == nil {
		l.tail = nil
	}
	w.next = nil
	return w
}
