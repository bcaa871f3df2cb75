package benchload

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Queue is the part of a work queue the load uses.
type Queue interface {
	Get() (item string, shutdown bool)
	Done(item string)
	Len() int
}

// MaxDepth bounds how far producers run ahead of consumers, so that the parallel benchmarks
// measure items through the queue, not duplicates absorbed by an ever deeper queue.
const MaxDepth = 1024

// batch is how many items each side accounts for at once.
const batch = 32

// Parallel moves b.N adds through q with `workers` producers calling add and as many consumers
// doing Get+Done; ns/op is the time per item. Each producer cycles through its own share of
// keys, so one that runs ahead of a descheduled one cannot add a key the other still has
// queued. Once the producers are done and the queue is empty, shutdown stops the consumers.
// The fraction of adds absorbed by deduplication is reported as dedup/op.
func Parallel(b *testing.B, q Queue, workers int, keys []string, add func(i int, key string), shutdown func()) {
	parallel(b, consumer{q: q}, workers, keys, add, shutdown)
}

// WorkerLoop is a queue whose workers hand an item back and take the next in one step, as
// ctrlkit's controllers do (workqueue.Queue's DoneAndTryGet).
type WorkerLoop interface {
	Queue
	DoneAndTryGet(item string) (next string, ok bool)
}

// ParallelWorkerLoop is Parallel with consumers that hand back each item and take the next
// with DoneAndTryGet, waiting in Get only when nothing is ready.
func ParallelWorkerLoop(b *testing.B, q WorkerLoop, workers int, keys []string, add func(i int, key string), shutdown func()) {
	parallel(b, consumer{q: q, loop: q}, workers, keys, add, shutdown)
}

// consumer takes items from q: Get then Done, or with loop set DoneAndTryGet then, when
// nothing is ready, Get.
type consumer struct {
	q    Queue
	loop WorkerLoop
}

// next hands back prev (when has) and returns the next item, waiting for one.
func (c consumer) next(prev string, has bool) (string, bool) {
	if has {
		if c.loop != nil {
			if k, ok := c.loop.DoneAndTryGet(prev); ok {
				return k, false
			}
		} else {
			c.q.Done(prev)
		}
	}
	return c.q.Get()
}

func parallel(b *testing.B, cq consumer, workers int, keys []string, add func(i int, key string), shutdown func()) {
	q := cq.q
	var consumers, producers sync.WaitGroup
	handled := make([]int, workers)
	th := newThrottle(MaxDepth)
	// The throttle's count of items in flight drifts up: adds absorbed by deduplication are
	// never consumed, and consumers account only whole batches. Once the drift passes MaxDepth,
	// every producer would wait for consumers that have nothing left to consume; so while the
	// producers run, this goroutine (idle otherwise) looks every 10 ms for producers stuck on an
	// empty queue (see unstick), and lets them go on. Made before the timer starts: it allocates.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	finished := make(chan struct{}, workers)
	b.ReportAllocs()
	b.ResetTimer()
	for c := range workers {
		consumers.Go(func() {
			n := 0
			for k, done := cq.next("", false); ; k, done = cq.next(k, true) {
				if done {
					handled[c] = n
					return
				}
				n++
				if n%batch == 0 {
					th.consumed(batch)
				}
			}
		})
	}
	share := len(keys) / workers
	for p := range workers {
		producers.Go(func() {
			for i, j := p, 0; i < b.N; i, j = i+workers, j+1 {
				if j%batch == 0 {
					th.produced(batch)
				}
				add(i, keys[p*share+j%share])
			}
			finished <- struct{}{}
		})
	}
	for left := workers; left > 0; {
		select {
		case <-finished:
			left--
		case <-tick.C:
			th.unstick(q)
		}
	}
	producers.Wait()
	for q.Len() > 0 { // controller-runtime's ShutDown drops what is still queued
		runtime.Gosched()
	}
	shutdown()
	consumers.Wait()
	b.StopTimer()
	total := 0
	for _, n := range handled {
		total += n
	}
	b.ReportMetric(float64(b.N-total)/float64(b.N), "dedup/op")
}

// throttle keeps producers at most max items ahead of consumers. Both sides account in batches
// (an atomic add per batch), and a producer that is too far ahead sleeps on a condition
// variable rather than spinning, leaving the CPUs to the consumers: a producer spinning on Len
// would also take the queue's lock in a tight loop, competing with what is measured.
type throttle struct {
	depth   atomic.Int64
	waiting atomic.Int32
	mu      sync.Mutex
	cond    sync.Cond
	max     int64

	batches atomic.Int64 // batches produced: progress, for the watchdog

	suspect        bool  // the watchdog's previous look found producers waiting on an empty queue
	suspectBatches int64 // and this many batches produced
}

func newThrottle(max int64) *throttle {
	t := &throttle{max: max}
	t.cond.L = &t.mu
	return t
}

func (t *throttle) produced(n int64) {
	t.batches.Add(1)
	if t.depth.Add(n) <= t.max {
		return
	}
	t.mu.Lock()
	t.waiting.Add(1)
	for t.depth.Load() > t.max {
		t.cond.Wait()
	}
	t.waiting.Add(-1)
	t.mu.Unlock()
}

// unstick releases the waiting producers when they have waited on an empty queue, with no batch
// produced, since the previous call: the count says they are too far ahead, but nothing they
// added is left to consume, so the count has drifted. (A single look would also catch producers
// already woken but not yet running, a state every cycle of a fast consumer passes through, and
// let them run far ahead.) Only the watchdog calls it.
func (t *throttle) unstick(q Queue) {
	batches := t.batches.Load()
	stuck := t.waiting.Load() > 0 && q.Len() == 0
	wasStuck := t.suspect && batches == t.suspectBatches
	t.suspect, t.suspectBatches = stuck, batches
	if !stuck || !wasStuck {
		return
	}
	t.suspect = false
	t.mu.Lock()
	t.depth.Store(0)
	t.cond.Broadcast()
	t.mu.Unlock()
}

func (t *throttle) consumed(n int64) {
	// A producer increments waiting before it checks depth, under mu: either it sees this
	// decrement, or this sees it waiting and wakes it.
	if t.depth.Add(-n) <= t.max && t.waiting.Load() > 0 {
		t.mu.Lock()
		t.cond.Broadcast()
		t.mu.Unlock()
	}
}
