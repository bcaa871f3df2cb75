package workqueue

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	kworkqueue "k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// Queue is a plain, delaying, rate-limiting and prioritised work queue in one type, with the
// semantics of client-go's util/workqueue. Build one with New; the zero Queue is not usable.
// All methods are safe for concurrent use.
type Queue[T comparable] struct {
	// The fields every Add, Get and Done touches come first, to share few cache lines.
	mu         sync.Mutex
	queued     int // live entries in ready: what Len reports
	processing int // entries handed out and not yet Done
	// items holds one entry per item the queue knows about: ready, being processed, waiting for
	// a delay, or several of these at once. An entry leaves it (and the item becomes
	// garbage-collectable) when it is none of them.
	items        table[T]
	waiters      waiterList[T]    // getters blocked in Get
	woken        waiterList[T]    // getters handed an item, to be woken once mu is released
	metrics      *queueMetrics[T] // nil when metrics are off
	provenance   bool             // keep a Reasons record per entry (WithProvenance)
	shuttingDown bool
	draining     bool
	delayed      delayHeap[T]
	waitSeq      uint64

	// handed caches the entries Get handed out, by the low bits of their tag, so that Done
	// finds its entry without a table lookup (a cache miss in a deep queue). It holds only
	// entries being processed: an entry's Done always finds it here if it is here, and clears
	// the slot, so no released entry is left in it.
	handed [handedSize]*entry[T]
	// retired holds entries Done finished whose slots are to leave the table; they leave in
	// batches (see retireLocked).
	retired  [retireBatch]*entry[T]
	nRetired int
	sink     uint64 // written by flushRetiredLocked so that its loads are not dropped

	drained sync.Cond // on mu; signalled while draining when nothing is queued or processing
	down    atomic.Bool

	clock   clock.WithTicker
	epoch   time.Time // ready times are durations since epoch
	limiter kworkqueue.TypedRateLimiter[T]

	loopStarted bool
	kick        chan struct{}
	stop        chan struct{}
	stopOnce    sync.Once
	wg          sync.WaitGroup // the delay and metrics goroutines

	waiterPool sync.Pool

	ready levels[T] // large: last
}

// The Queue drops into code written against client-go's interfaces.
var _ kworkqueue.TypedRateLimitingInterface[string] = (*Queue[string])(nil)

// AddOpts are the options of AddWithOpts. The zero value is a plain Add.
type AddOpts struct {
	// Priority orders ready items: higher first, FIFO within one priority. Add, AddAfter and
	// AddRateLimited use 0; negative priorities are allowed. An item added again keeps the higher
	// of its priorities (raising it moves the item to the back of the higher priority).
	Priority int
	// After delays the add like AddAfter; zero or negative adds at once.
	After time.Duration
	// RateLimited delays the add by the rate limiter's delay for the item, like AddRateLimited.
	// With After also positive, the shorter of the two delays is used (controller-runtime's rule);
	// the limiter counts the requeue either way.
	RateLimited bool
	// Trigger is why the items are added, merged into each item's record on a queue with
	// provenance (WithProvenance) and ignored otherwise. A delayed add's trigger joins the
	// record when the delay ends.
	Trigger Trigger
}

// entry state bits. An entry can be ready (stQueued) or processing, never both; stDirty means
// "processing and added again": Done makes it ready. Waiting for a delay (entry.waiting) is
// independent of the state bits, as client-go's delaying queue is a layer over its queue.
const (
	stQueued uint8 = 1 << iota
	stProcessing
	stDirty
)

// entry is what the queue knows of one item. Entries live in the table's arena (arena.go),
// which recycles them.
type entry[T comparable] struct {
	item T
	prio int    // priority of the ready slot, or of the re-add when dirty
	seq  uint64 // matches the entry's live slot in ready; bumped on every enqueue

	readyAt  time.Duration // since Queue.epoch
	waitPrio int
	waitSeq  uint64 // matches the entry's live slot in delayed

	mx  *entryMetrics[T] // nil unless metrics are on; kept when the entry is recycled
	why *provenance      // nil unless provenance is on; kept when the entry is recycled

	tag  uint32 // the table's tag of item's hash
	idx  uint32 // where the entry is in the arena
	next uint32 // the arena's list of free entries, while released

	state   uint8
	waiting bool // in delayed
	retired bool // in Queue.retired: done, its item let go, its slot to leave with the batch
}

// New returns a running queue. Call ShutDown (or ShutDownWithDrain) when done with it: that stops
// the queue's goroutines (one for delays, started on first use, and one for metrics when
// enabled). T is inferred from the options when they name it; New[T]() builds a queue with
// every default.
func New[T comparable](opts ...Option[T]) *Queue[T] {
	var o options[T]
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	q := &Queue[T]{
		items:      newTable[T](),
		clock:      o.clock,
		limiter:    o.limiter,
		provenance: o.provenance,
		kick:       make(chan struct{}, 1),
		stop:       make(chan struct{}),
	}
	q.drained.L = &q.mu
	q.waiterPool.New = func() any { return &waiter[T]{ch: make(chan struct{}, 1)} }
	if q.clock == nil {
		q.clock = clock.RealClock{}
	}
	if q.limiter == nil {
		q.limiter = kworkqueue.DefaultTypedControllerRateLimiter[T]()
	}
	q.epoch = q.clock.Now()
	if q.metrics = newQueueMetrics[T](o.metrics, o.name, q.clock); q.metrics != nil {
		t := q.clock.NewTicker(unfinishedWorkPeriod)
		q.wg.Add(1)
		go q.metricsLoop(t)
	}
	return q
}

// Add marks item as needing processing, at priority 0. An item already waiting to be handed out
// is not queued twice; an item being processed is handed out again after its Done. Adds after
// ShutDown are ignored, as is an add of a new item while the queue holds 2^31 items.
func (q *Queue[T]) Add(item T) {
	h := q.items.hash(item)
	q.items.touch(h)
	q.lock()
	if !q.shuttingDown {
		q.addLocked(item, h, 0, nil)
		if q.waiters.head != nil {
			q.dispatchLocked()
		}
	}
	q.unlock()
}

// AddWithOpts adds items with a priority, a delay or a rate-limited delay (see AddOpts). Delayed
// items keep their priority: it applies when the delay ends.
func (q *Queue[T]) AddWithOpts(o AddOpts, items ...T) {
	if len(items) == 0 || q.down.Load() {
		return
	}
	switch {
	case o.RateLimited:
		for _, item := range items {
			d := q.limiter.When(item)
			if o.After > 0 && o.After < d {
				d = o.After
			}
			q.addAfter(item, d, o.Priority, &o.Trigger)
		}
	case o.After > 0:
		at := q.deadline(o.After)
		q.lock()
		if !q.shuttingDown {
			for _, item := range items {
				if q.metrics != nil {
					q.metrics.retry()
				}
				q.delayLocked(item, q.items.hash(item), at, o.Priority, &o.Trigger)
			}
		}
		q.unlock()
	default:
		q.lock()
		if !q.shuttingDown {
			for _, item := range items {
				q.addLocked(item, q.items.hash(item), o.Priority, &o.Trigger)
			}
			if q.waiters.head != nil {
				q.dispatchLocked()
			}
		}
		q.unlock()
	}
}

// AddAfter adds item once d has passed; d <= 0 adds at once. An item already waiting keeps the
// earlier of its ready times. Items still waiting at ShutDown are dropped, as in client-go.
func (q *Queue[T]) AddAfter(item T, d time.Duration) {
	q.addAfter(item, d, 0, nil)
}

// AddRateLimited adds item after the delay the rate limiter gives it.
func (q *Queue[T]) AddRateLimited(item T) {
	if q.down.Load() {
		return
	}
	q.addAfter(item, q.limiter.When(item), 0, nil)
}

// Forget tells the rate limiter to stop tracking item (its backoff starts over). It does not
// remove the item from the queue; the worker still calls Done.
func (q *Queue[T]) Forget(item T) { q.limiter.Forget(item) }

// NumRequeues reports how many times the rate limiter has delayed item since it was forgotten.
func (q *Queue[T]) NumRequeues(item T) int { return q.limiter.NumRequeues(item) }

func (q *Queue[T]) addAfter(item T, d time.Duration, prio int, t *Trigger) {
	var at time.Duration
	if d > 0 {
		at = q.deadline(d) // read the clock outside the lock
	}
	h := q.items.hash(item)
	q.lock()
	defer q.unlock()
	if q.shuttingDown {
		return
	}
	if q.metrics != nil {
		q.metrics.retry()
	}
	if d <= 0 {
		q.addLocked(item, h, prio, t)
		if q.waiters.head != nil {
			q.dispatchLocked()
		}
		return
	}
	q.delayLocked(item, h, at, prio, t)
}

// Len returns the number of items ready to be handed out, counting the delayed items that are
// due, for information only.
func (q *Queue[T]) Len() int {
	q.lock()
	defer q.unlock()
	if q.delayed.len() > 0 {
		q.promoteLocked(q.now())
	}
	return q.queued
}

// Get blocks until it can hand out an item, the highest priority first and the oldest first
// within a priority. The caller owns the item until it calls Done; no other caller gets it
// meanwhile. After ShutDown, Get still hands out the items that are ready and then reports
// shutdown = true. Workers should keep calling Get until it does.
func (q *Queue[T]) Get() (item T, shutdown bool) { return q.get(nil) }

// get is Get that, when why is not nil, also sets *why to the item's record.
func (q *Queue[T]) get(why *Reasons) (item T, shutdown bool) {
	q.lock()
	if e := q.tryTakeLocked(why); e != nil {
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
	if why != nil {
		*why = w.why
	}
	var zero T
	w.item, w.shutdown = zero, false
	if q.provenance {
		w.why = Reasons{}
	}
	q.waiterPool.Put(w)
	return item, shutdown
}

// tryTakeLocked hands out the next ready item, as takeLocked, or returns nil when none is ready.
func (q *Queue[T]) tryTakeLocked(why *Reasons) *entry[T] {
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
	return q.takeLocked(why)
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

// DoneAndTryGetWithReasons is DoneAndTryGet that also returns why the next item was queued,
// as GetWithReasons does.
func (q *Queue[T]) DoneAndTryGetWithReasons(item T) (next T, why Reasons, ok bool) {
	next, ok = q.doneAndTryGet(item, &why)
	return next, why, ok
}

// doneAndTryGet is DoneAndTryGet that, when why is not nil, also sets *why to the next item's
// record.
func (q *Queue[T]) doneAndTryGet(item T, why *Reasons) (next T, ok bool) {
	h := q.items.hash(item)
	q.lock()
	q.doneLocked(item, h)
	if e := q.tryTakeLocked(why); e != nil {
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
	if e.state&stDirty != 0 {
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

// addLocked marks item, whose hash is h, as needing processing at priority prio, for the
// reason t (nil: unspecified) when the queue keeps provenance.
func (q *Queue[T]) addLocked(item T, h uint64, prio int, t *Trigger) {
	e := q.items.get(h, item)
	if e == nil {
		if e = q.newEntryLocked(item, h); e == nil {
			return
		}
		q.enqueueLocked(e, prio)
		if q.metrics != nil {
			q.metrics.added(e)
		}
	} else {
		q.readyLocked(e, prio)
	}
	if q.provenance {
		q.recordLocked(e, t, false)
	}
}

// readyLocked applies an add of priority prio to a known entry.
func (q *Queue[T]) readyLocked(e *entry[T], prio int) {
	switch {
	case e.state&stProcessing != 0:
		if e.state&stDirty == 0 {
			e.state |= stDirty
			e.prio = prio
			if q.metrics != nil {
				q.metrics.added(e)
			}
		} else if prio > e.prio {
			e.prio = prio
		}
	case e.state&stQueued != 0:
		if prio > e.prio {
			// Move to the back of the higher priority; the old slot becomes stale.
			old := e.prio
			e.prio = prio
			e.seq++
			q.ready.abandon(old)
			q.ready.push(e)
		}
	default: // only waiting for a delay
		q.enqueueLocked(e, prio)
		if q.metrics != nil {
			q.metrics.added(e)
		}
	}
}

func (q *Queue[T]) enqueueLocked(e *entry[T], prio int) {
	e.state |= stQueued
	e.prio = prio
	e.seq++
	q.ready.push(e)
	q.queued++
}

// takeLocked pops the next ready entry and marks it processing, moving its record (if any) to
// why when why is not nil. q.queued must be > 0.
func (q *Queue[T]) takeLocked(why *Reasons) *entry[T] {
	e := q.ready.pop()
	if e.why != nil {
		if why != nil {
			*why = e.why.ready
		}
		e.why.ready = Reasons{}
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
		w.item = q.takeLocked(&w.why).item
		q.woken.push(w)
	}
}

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

// newEntryLocked adds an entry for item, whose hash is h and which the queue does not know, or
// returns nil when the queue already holds maxEntries items, retired ones not counted (the add
// is then dropped).
func (q *Queue[T]) newEntryLocked(item T, h uint64) *entry[T] {
	e := q.items.insert(item, h)
	if e == nil && q.nRetired > 0 {
		// Full, but retired entries are only waiting for their batch: free them first.
		q.flushRetiredLocked()
		e = q.items.insert(item, h)
	}
	return e
}

// tagOf is the tag of hash h: its high 32 bits, with 0 (the empty slot) taken as 1.
func tagOf(h uint64) uint32 {
	if tag := uint32(h >> 32); tag != 0 {
		return tag
	}
	return 1
}

const (
	handedSize  = 64
	retireBatch = 32
)

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
	if e.why != nil {
		*e.why = provenance{}
	}
}

// waiter is a getter blocked in Get. The item is handed to it under the queue's lock.
type waiter[T comparable] struct {
	ch       chan struct{} // buffered 1: the waker never blocks
	item     T
	why      Reasons // the item's record, on a queue with provenance
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
