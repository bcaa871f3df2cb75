package bench

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/internal/benchload"
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
	// The same with each library's controller worker loop: ctrlkit's hands a key back and takes
	// the next in one step; controller-runtime's calls Get and Done.
	workload(b, "parallel-8-priority-controllerloop", true, func(b *testing.B, im Impl) {
		q := im.New()
		add := func(i int, key string) { im.AddPriority(q, i%Priorities, key) }
		if im.Loop {
			benchload.ParallelWorkerLoop(b, q.(benchload.WorkerLoop), 8, parallelKeys, add, q.ShutDown)
			return
		}
		benchload.Parallel(b, q, 8, parallelKeys, add, q.ShutDown)
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

// parallel moves b.N distinct adds through one queue with `workers` producers and as many
// consumers doing Get+Done. ns/op is per item.
func parallel(b *testing.B, im Impl, workers int, add func(q Queue, i int, key string)) {
	q := im.New()
	benchload.Parallel(b, q, workers, parallelKeys, func(i int, key string) { add(q, i, key) }, q.ShutDown)
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

// BenchmarkQueueBurst is a start-up burst: 8 producers add 4·10^5 distinct keys with no
// throttle into an empty queue while 8 consumers take them. ns/item is per key.
func BenchmarkQueueBurst(b *testing.B) {
	keys := Keys(400_000)
	add, shutdown := func(q Queue, k string) { q.Add(k) }, func(q Queue) { q.ShutDown() }
	workload(b, "burst-8x8-400000", false, func(b *testing.B, im Impl) {
		benchload.Burst(b, im.New, add, shutdown, 8, 8, keys)
	})
	// The same with each library's controller worker loop (see parallel-8-priority-controllerloop).
	workload(b, "burst-8x8-400000-controllerloop", false, func(b *testing.B, im Impl) {
		if !im.Loop {
			benchload.Burst(b, im.New, add, shutdown, 8, 8, keys)
			return
		}
		newLoop := func() benchload.WorkerLoop { return im.New().(benchload.WorkerLoop) }
		benchload.BurstWorkerLoop(b, newLoop, func(q benchload.WorkerLoop, k string) { q.(Queue).Add(k) },
			func(q benchload.WorkerLoop) { q.(Queue).ShutDown() }, 8, 8, keys)
	})
}

// BenchmarkQueueFill adds n distinct keys to an empty queue, then drains it, one goroutine.
func BenchmarkQueueFill(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		keys := Keys(n)
		workload(b, "fill-"+strconv.Itoa(n), false, func(b *testing.B, im Impl) {
			benchload.Fill(b, im.New, func(q Queue, k string) { q.Add(k) }, func(q Queue) { q.ShutDown() }, keys)
		})
	}
}

// BenchmarkQueueMemory reports the heap a queue holds per queued key, with n distinct keys
// queued (live-B/key; ns/op is the fill and two collections, not a figure to compare).
func BenchmarkQueueMemory(b *testing.B) {
	for _, n := range []int{10_000, 1_000_000} {
		keys := Keys(n)
		workload(b, "live-"+strconv.Itoa(n), false, func(b *testing.B, im Impl) {
			benchload.LiveBytes(b, im.New, func(q Queue, k string) { q.Add(k) }, func(q Queue) { q.ShutDown() }, keys)
		})
	}
}
