package workqueue

import (
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
	provenance   bool             // keep a Record per entry (WithProvenance)
	shuttingDown bool
	draining     bool
	delayed      delayHeap[T]
	waitSeq      uint64
	// wakes holds the wake times of held entries whose hold an add may end early
	// (AddOpts.WakeAfter); nil until the first. Held entries are few: failing keys.
	wakes map[*entry[T]]time.Duration

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

	clock clock.WithTicker
	epoch time.Time // ready times are durations since epoch
	// agePeriod is a quarter of WithAging's bound; 0 when aging is off.
	agePeriod time.Duration
	limiter   kworkqueue.TypedRateLimiter[T]

	loopStarted bool
	kick        chan struct{}
	stop        chan struct{}
	stopOnce    sync.Once
	wg          sync.WaitGroup // the delay, aging and metrics goroutines

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
	// Hold keeps a delayed item out until its delay ends, whatever else is added meanwhile: an
	// add at once, an earlier delayed add, or an add while the item is being processed (which
	// would hand it out again right after Done) joins the held add instead, its cause recorded
	// and its priority kept. It makes a retry's backoff one that events cannot cut short, nor
	// inflate by failing early (kubernetes#132805); without it, as in client-go, an event
	// hands a backing-off item out at once. Hold needs a delay (After or RateLimited); an item
	// already ready stays ready. The hold ends with the delay.
	Hold bool
	// WakeAfter, with Hold, lets the first add that joins the hold end it early: the item
	// comes out WakeAfter after the held add (at once if that time has passed), unless its
	// delay ends sooner; the adds after it join the hold as before. An event then waits at
	// most WakeAfter for a backing-off item, and a stream of events hands it out at most once
	// per hold. 0 holds for the whole delay.
	WakeAfter time.Duration
	// Cause is why the items are added, merged into each item's record on a queue with
	// provenance (WithProvenance) and ignored otherwise. A delayed add's cause joins the
	// record when the delay ends.
	Cause Cause
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
	rec *provenance      // nil unless provenance is on; kept when the entry is recycled

	tag  uint32 // the table's tag of item's hash
	idx  uint32 // where the entry is in the arena
	next uint32 // the arena's list of free entries, while released

	state   uint8
	waiting bool // in delayed
	held    bool // waiting for an AddOpts.Hold add: other adds wait with it
	retired bool // in Queue.retired: done, its item let go, its slot to leave with the batch
}

// New returns a running queue. Call ShutDown (or ShutDownWithDrain) when done with it: that stops
// the queue's goroutines (one for delays, started on first use, one for aging when WithAging is
// set, and one for metrics when enabled). T is inferred from the options when they name it; New[T]() builds a queue with
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
	q.ready.flowOf, q.ready.weightOf = o.flowOf, o.weightOf
	if o.aging > 0 {
		q.agePeriod = max(time.Nanosecond, o.aging/(ageMarks-1))
		q.everyTick(q.agePeriod, func() { q.catchUpLocked(q.now()) })
	}
	if q.metrics = newQueueMetrics[T](o.metrics, o.name, q.clock); q.metrics != nil {
		q.everyTick(unfinishedWorkPeriod, func() {
			if !q.shuttingDown {
				q.metrics.updateUnfinishedWork()
			}
		})
	}
	return q
}

// everyTick starts a goroutine that calls f under the queue's lock every period until the queue
// stops. The ticker is created here, so a fake clock has its waiter as soon as New returns.
func (q *Queue[T]) everyTick(period time.Duration, f func()) {
	t := q.clock.NewTicker(period)
	q.wg.Add(1)
	go func() {
		defer q.wg.Done()
		defer t.Stop()
		for {
			select {
			case <-q.stop:
				return
			case <-t.C():
				q.lock()
				f()
				q.unlock()
			}
		}
	}()
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
			q.addAfter(item, d, o.Priority, &o.Cause, o.Hold, o.WakeAfter)
		}
	case o.After > 0:
		at := q.deadline(o.After)
		hold := q.holdOf(o.Hold, o.WakeAfter, o.After)
		q.lock()
		if !q.shuttingDown {
			for _, item := range items {
				if q.metrics != nil {
					q.metrics.retry()
				}
				q.delayLocked(item, q.items.hash(item), at, o.Priority, &o.Cause, hold)
			}
		}
		q.unlock()
	default:
		q.lock()
		if !q.shuttingDown {
			for _, item := range items {
				q.addLocked(item, q.items.hash(item), o.Priority, &o.Cause)
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
	q.addAfter(item, d, 0, nil, false, 0)
}

func (q *Queue[T]) addAfter(item T, d time.Duration, prio int, c *Cause, held bool, wake time.Duration) {
	var at time.Duration
	var hold holding
	if d > 0 {
		at = q.deadline(d) // read the clock outside the lock
		hold = q.holdOf(held, wake, d)
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
		q.addLocked(item, h, prio, c)
		if q.waiters.head != nil {
			q.dispatchLocked()
		}
		return
	}
	q.delayLocked(item, h, at, prio, c, hold)
}

// holding is how a delayed add holds its item (AddOpts.Hold and WakeAfter).
type holding struct {
	on     bool
	wakeAt time.Duration // since Queue.epoch; 0: the hold lasts the whole delay
}

// holdOf is the holding of an add delayed by d; the clock is read outside the lock.
func (q *Queue[T]) holdOf(hold bool, wake, d time.Duration) holding {
	if !hold {
		return holding{}
	}
	if wake <= 0 || wake >= d {
		return holding{on: true}
	}
	return holding{on: true, wakeAt: q.deadline(wake)}
}

// Len returns the number of items ready to be handed out, counting the delayed items that are
// due, for information only. It also promotes the items that aged (WithAging) by now.
func (q *Queue[T]) Len() int {
	q.lock()
	defer q.unlock()
	if q.delayed.len() > 0 || q.agePeriod > 0 {
		q.catchUpLocked(q.now())
	}
	return q.queued
}

// addLocked marks item, whose hash is h, as needing processing at priority prio, for the
// cause c (nil: the zero Cause) when the queue keeps provenance.
func (q *Queue[T]) addLocked(item T, h uint64, prio int, c *Cause) {
	e := q.items.get(h, item)
	if e != nil && e.held && e.state&stProcessing == 0 {
		q.joinHoldLocked(e, prio, c)
		return
	}
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
		q.recordLocked(e, c, false)
	}
}

// joinHoldLocked folds an add of priority prio, for the cause c, into e's held delay.
func (q *Queue[T]) joinHoldLocked(e *entry[T], prio int, c *Cause) {
	if prio > e.waitPrio {
		e.waitPrio = prio
	}
	if q.provenance {
		q.recordLocked(e, c, true)
	}
	q.wakeLocked(e)
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
			old := e.prio
			e.prio = prio
			if q.metrics != nil {
				q.metrics.reprioritized(e, old)
			}
		}
	case e.state&stQueued != 0:
		if prio > e.prio {
			// Move to the back of the higher priority; the old slot becomes stale.
			old := e.prio
			e.prio = prio
			e.seq++
			q.ready.abandon(e, old)
			q.ready.push(e)
			if q.metrics != nil {
				q.metrics.reprioritized(e, old)
			}
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
