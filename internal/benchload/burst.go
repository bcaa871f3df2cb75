package benchload

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// Burst is a controller's start-up (or relist): producers add every key once, as fast as they
// can, into an empty queue while consumers Get+Done. One op is one whole burst through a new
// queue from newQueue (so its growth from empty is part of the cost); the producers split keys
// between them, which must be distinct. ns/item is the time per key.
func Burst[Q Queue](b *testing.B, newQueue func() Q, add func(q Q, key string), shutdown func(q Q), producers, consumers int, keys []string) {
	bursts(b, newQueue, func(q Q) consumer { return consumer{q: q} }, add, shutdown, producers, consumers, keys)
}

// BurstWorkerLoop is Burst with consumers that hand back each item and take the next with
// DoneAndTryGet, as ctrlkit's controllers do.
func BurstWorkerLoop[Q WorkerLoop](b *testing.B, newQueue func() Q, add func(q Q, key string), shutdown func(q Q), producers, consumers int, keys []string) {
	bursts(b, newQueue, func(q Q) consumer { return consumer{q: q, loop: q} }, add, shutdown, producers, consumers, keys)
}

// bursts times one burst per op, each through a new queue taken by the consumer cq returns.
func bursts[Q Queue](b *testing.B, newQueue func() Q, cq func(Q) consumer, add func(q Q, key string), shutdown func(q Q), producers, consumers int, keys []string) {
	b.ReportAllocs()
	cpu := startCPU()
	for b.Loop() {
		q := newQueue()
		burst(q, cq(q), add, shutdown, producers, consumers, keys)
	}
	perItem(b, cpu, len(keys))
}

func burst[Q Queue](q Q, cq consumer, add func(q Q, key string), shutdown func(q Q), producers, consumers int, keys []string) {
	var (
		handled  atomic.Int64
		all      = make(chan struct{})
		workers  sync.WaitGroup
		total    = int64(len(keys))
		perShare = (len(keys) + producers - 1) / producers
	)
	for range consumers {
		workers.Go(func() {
			for k, done := cq.next("", false); !done; k, done = cq.next(k, true) {
				if handled.Add(1) == total {
					close(all)
				}
			}
		})
	}
	for p := range producers {
		share := keys[min(p*perShare, len(keys)):min((p+1)*perShare, len(keys))]
		workers.Go(func() {
			for _, k := range share {
				add(q, k)
			}
		})
	}
	<-all
	shutdown(q)
	workers.Wait()
}

// Fill adds every key to a new queue from newQueue, then Gets and Dones them all, from one
// goroutine: the deepest a queue gets, as when a controller's workers are all busy during a
// relist. One op is one fill and drain; ns/item is the time per key. keys must be distinct.
func Fill[Q Queue](b *testing.B, newQueue func() Q, add func(q Q, key string), shutdown func(q Q), keys []string) {
	b.ReportAllocs()
	cpu := startCPU()
	for b.Loop() {
		q := newQueue()
		for _, k := range keys {
			add(q, k)
		}
		for range keys {
			k, _ := q.Get()
			q.Done(k)
		}
		shutdown(q)
	}
	perItem(b, cpu, len(keys))
}

type cpuStart struct {
	ns int64
	ok bool
}

func startCPU() cpuStart {
	ns, ok := cpuTime()
	return cpuStart{ns, ok}
}

// perItem reports the wall time per item and, where the system tells, the CPU time the whole
// process used per item (every goroutine's, the garbage collector's and spinning included).
// On a shared machine the CPU time is the steadier of the two: time spent waiting for a CPU
// taken by another process is not in it.
func perItem(b *testing.B, start cpuStart, items int) {
	n := float64(b.N * items)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/item")
	if end, ok := cpuTime(); ok && start.ok {
		b.ReportMetric(float64(end-start.ns)/n, "cpu-ns/item")
	}
}

// LiveBytes adds every key to a new queue from newQueue and reports the heap the queued keys
// hold, after a collection, per key (live-B/key; the keys' own strings are not counted: they
// are allocated before). One op is one fill; the queue is shut down untimed.
func LiveBytes[Q Queue](b *testing.B, newQueue func() Q, add func(q Q, key string), shutdown func(q Q), keys []string) {
	var before, after runtime.MemStats
	var live float64
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&before)
		q := newQueue()
		for _, k := range keys {
			add(q, k)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		live = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(len(keys))
		b.StopTimer()
		shutdown(q)
		b.StartTimer()
	}
	b.ReportMetric(live, "live-B/key")
}
