package bench

import (
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The workloads of ctrlkit's in-package benchmarks (workqueue/bench_test.go), run on every
// implementation in Impls. Sub-benchmarks are named workload=<w>/impl=<i>; the implementations
// of one workload run one after the other, so they see similar load on a shared machine.

var (
	roundTripKeys = Keys(1024)
	parallelKeys  = Keys(1 << 18)
)

func BenchmarkQueue(b *testing.B) {
	workload(b, "roundtrip", false, func(b *testing.B, im Impl) {
		q := im.New()
		defer q.ShutDown()
		roundTrips(b, q, func(i int) { q.Add(roundTripKeys[i&1023]) })
	})
	workload(b, "roundtrip-priority", true, func(b *testing.B, im Impl) {
		q := im.New()
		defer q.ShutDown()
		roundTrips(b, q, func(i int) { im.AddPriority(q, i%Priorities, roundTripKeys[i&1023]) })
	})
	workload(b, "roundtrip-delays-pending", false, func(b *testing.B, im Impl) {
		q := im.New()
		defer q.ShutDown()
		for _, k := range Keys(2048)[1024:] {
			q.AddAfter(k, time.Hour)
		}
		roundTrips(b, q, func(i int) { q.Add(roundTripKeys[i&1023]) })
	})
	workload(b, "roundtrip-delayed", false, func(b *testing.B, im Impl) {
		q := im.New()
		defer q.ShutDown()
		roundTrips(b, q, func(i int) { q.AddAfter(roundTripKeys[i&1023], time.Nanosecond) })
	})
	for _, workers := range []int{1, 2, 8} {
		workload(b, "parallel-"+strconv.Itoa(workers), false, func(b *testing.B, im Impl) {
			parallel(b, im, workers, func(q Queue, _ int, key string) { q.Add(key) })
		})
	}
	workload(b, "parallel-8-priority", true, func(b *testing.B, im Impl) {
		parallel(b, im, 8, func(q Queue, i int, key string) { im.AddPriority(q, i%Priorities, key) })
	})
	for _, n := range []int{100_000, 1_000_000} {
		keys := Keys(n)
		workload(b, "addafter-"+strconv.Itoa(n), false, func(b *testing.B, im Impl) {
			addAfter(b, im, keys)
		})
	}
}

// workload runs f for every implementation (only those with priorities if priorities is set).
func workload(b *testing.B, name string, priorities bool, f func(*testing.B, Impl)) {
	b.Run("workload="+name, func(b *testing.B) {
		for _, im := range Impls {
			if priorities && im.AddPriority == nil {
				continue
			}
			b.Run("impl="+im.Name, func(b *testing.B) { f(b, im) })
		}
	})
}

// roundTrips times add(i) + Get + Done by one goroutine.
func roundTrips(b *testing.B, q Queue, add func(int)) {
	for i := range 2048 { // warm up
		add(i)
		k, _ := q.Get()
		q.Done(k)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		add(i)
		k, _ := q.Get()
		q.Done(k)
	}
}

// maxDepth bounds how far producers run ahead of consumers in the parallel workloads: far below
// each producer's share of the keys, so no add meets its key still queued (dedup/op would report
// it; the rare dedup left is a consumer descheduled while holding a key for two of its producer's
// cycles), and the benchmark measures items through the queue rather than absorbed duplicates.
const maxDepth = 1024

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
}

// batch is how many items each side accounts for at once.
const batch = 32

func newThrottle(max int64) *throttle {
	t := &throttle{max: max}
	t.cond.L = &t.mu
	return t
}

func (t *throttle) produced(n int64) {
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

func (t *throttle) consumed(n int64) {
	// A producer increments waiting before it checks depth, under mu: either it sees this
	// decrement, or this sees it waiting and wakes it.
	if t.depth.Add(-n) <= t.max && t.waiting.Load() > 0 {
		t.mu.Lock()
		t.cond.Broadcast()
		t.mu.Unlock()
	}
}

// parallel moves b.N distinct adds through one queue with `workers` producers and as many
// consumers doing Get+Done. ns/op is per item.
func parallel(b *testing.B, im Impl, workers int, add func(q Queue, i int, key string)) {
	q := im.New()
	keys := parallelKeys
	var consumers, producers sync.WaitGroup
	handled := make([]int, workers)
	th := newThrottle(maxDepth)
	b.ReportAllocs()
	b.ResetTimer()
	for c := range workers {
		consumers.Go(func() {
			n := 0
			for {
				k, shutdown := q.Get()
				if shutdown {
					handled[c] = n
					return
				}
				n++
				if n%batch == 0 {
					th.consumed(batch)
				}
				q.Done(k)
			}
		})
	}
	for p := range workers {
		producers.Go(func() {
			// Each producer cycles through its own share of the keys: a producer that runs
			// ahead of a descheduled one cannot add a key the other still has queued.
			share := len(keys) / workers
			for i, j := p, 0; i < b.N; i, j = i+workers, j+1 {
				if j%batch == 0 {
					th.produced(batch)
				}
				add(q, i, keys[p*share+j%share])
			}
		})
	}
	producers.Wait()
	for q.Len() > 0 { // controller-runtime's ShutDown drops what is still queued
		runtime.Gosched()
	}
	q.ShutDown()
	consumers.Wait()
	b.StopTimer()
	total := 0
	for _, n := range handled {
		total += n
	}
	b.ReportMetric(float64(b.N-total)/float64(b.N), "dedup/op")
}

// addAfter delays every key by a pseudo-random delay of up to 1 ms (on the real clock:
// controller-runtime's queue takes no clock), then hands every key out. One op is the batch;
// ns/item is per key.
func addAfter(b *testing.B, im Impl, keys []string) {
	b.ReportAllocs()
	for b.Loop() {
		q := im.New()
		rng := rand.New(rand.NewPCG(1, 2))
		for _, k := range keys {
			q.AddAfter(k, time.Duration(1+rng.Int64N(int64(time.Millisecond))))
		}
		for range keys {
			k, _ := q.Get()
			q.Done(k)
		}
		q.ShutDown()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/item")
}
