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
