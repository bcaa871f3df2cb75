package workqueue_test

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/internal/benchload"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// benchKeys are controller-like keys ("namespace/name"). In the parallel benchmarks each producer
// cycles through its own share of them, at most benchload.MaxDepth items ahead of the consumers, so an add
// never meets its key still queued (dedup/op shows the rare exception: a consumer descheduled
// while holding a key for two of its producer's cycles).
var benchKeys = func() []string {
	keys := make([]string, 1<<18)
	for i := range keys {
		keys[i] = "namespace-" + strconv.Itoa(i%97) + "/object-" + strconv.Itoa(i)
	}
	return keys
}()

// BenchmarkRoundTrip is one Add+Get+Done by one goroutine.
//   - plain: Add.
//   - priority: AddWithOpts with four priorities in turn.
//   - delays-pending: Add while 1024 other items wait for a delay (so Get checks the clock).
//   - delayed: AddWithOpts{After: 1ns}, handed out by the next Get once due.
//   - flows-one: Add on a queue with flows, every key in one flow.
//   - flows-namespace: Add on a queue with a flow per namespace: each add makes a flow and each
//     Get drops it (the free list's cost).
//   - flows-namespace-aging: the same with aging on (a tick per 15 s: no sweep during the run).
func BenchmarkRoundTrip(b *testing.B) {
	b.Run("workload=plain", func(b *testing.B) {
		q := workqueue.New[string]()
		defer q.ShutDown()
		roundTrips(b, func(i int) { q.Add(benchKeys[i&1023]) }, q)
	})
	b.Run("workload=priority", func(b *testing.B) {
		q := workqueue.New[string]()
		defer q.ShutDown()
		roundTrips(b, func(i int) { q.AddWithOpts(workqueue.AddOpts{Priority: i & 3}, benchKeys[i&1023]) }, q)
	})
	b.Run("workload=delays-pending", func(b *testing.B) {
		q := workqueue.New[string]()
		defer q.ShutDown()
		for _, k := range benchKeys[1024:2048] {
			q.AddAfter(k, time.Hour)
		}
		roundTrips(b, func(i int) { q.Add(benchKeys[i&1023]) }, q)
	})
	b.Run("workload=delayed", func(b *testing.B) {
		q := workqueue.New[string]()
		defer q.ShutDown()
		roundTrips(b, func(i int) { q.AddWithOpts(workqueue.AddOpts{After: time.Nanosecond}, benchKeys[i&1023]) }, q)
	})
	b.Run("workload=flows-one", func(b *testing.B) {
		q := workqueue.New(workqueue.WithFlows(func(string) string { return "" }))
		defer q.ShutDown()
		roundTrips(b, func(i int) { q.Add(benchKeys[i&1023]) }, q)
	})
	b.Run("workload=flows-namespace", func(b *testing.B) {
		q := workqueue.New(workqueue.WithFlows(namespaceOf))
		defer q.ShutDown()
		roundTrips(b, func(i int) { q.Add(benchKeys[i&1023]) }, q)
	})
	b.Run("workload=flows-namespace-aging", func(b *testing.B) {
		q := workqueue.New(workqueue.WithFlows(namespaceOf), workqueue.WithAging[string](time.Minute))
		defer q.ShutDown()
		roundTrips(b, func(i int) { q.Add(benchKeys[i&1023]) }, q)
	})
}

// namespaceOf is the flow of a "namespace/name" key.
func namespaceOf(key string) string {
	ns, _, _ := strings.Cut(key, "/")
	return ns
}

func roundTrips(b *testing.B, add func(int), q *workqueue.Queue[string]) {
	for i := range 2048 { // warm up: rings, free list, map
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

// BenchmarkParallel moves b.N distinct adds through one queue with `workers` producers adding
// and as many consumers running Get+Done. ns/op is the time per item.
func BenchmarkParallel(b *testing.B) {
	for _, workers := range []int{1, 2, 8} {
		b.Run("workers="+strconv.Itoa(workers), func(b *testing.B) {
			parallel(b, workers, func(q *workqueue.Queue[string], _ int, key string) { q.Add(key) })
		})
	}
	b.Run("workers=8/priorities", func(b *testing.B) {
		parallel(b, 8, func(q *workqueue.Queue[string], i int, key string) {
			q.AddWithOpts(workqueue.AddOpts{Priority: i & 3}, key)
		})
	})
	// The consumers hand each key back and take the next with DoneAndTryGet.
	b.Run("workers=8/priorities/worker-loop", func(b *testing.B) {
		q := workqueue.New[string]()
		add := func(i int, key string) { q.AddWithOpts(workqueue.AddOpts{Priority: i & 3}, key) }
		benchload.ParallelWorkerLoop(b, q, 8, benchKeys, add, q.ShutDownWithDrain)
	})
	// A flow per namespace (97 of them), served in turns.
	b.Run("workers=8/flows", func(b *testing.B) {
		q := workqueue.New(workqueue.WithFlows(namespaceOf))
		benchload.Parallel(b, q, 8, benchKeys, func(_ int, key string) { q.Add(key) }, q.ShutDownWithDrain)
	})
}

// BenchmarkParallelFloor runs the load of BenchmarkParallel/workers=8 through floorQueue, the
// least a queue can do under it, for the floor the load and one lock set on a machine.
func BenchmarkParallelFloor(b *testing.B) {
	q := &floorQueue{}
	q.ready.L = &q.mu
	benchload.Parallel(b, q, 8, benchKeys, func(_ int, key string) { q.add(key) }, q.shutDown)
}

// floorQueue is one mutex around a FIFO slice: no deduplication, no processing set, no
// priorities, no delays. It is not a work queue; it measures the benchmark load and the lock.
type floorQueue struct {
	mu    sync.Mutex
	ready sync.Cond
	items []string
	head  int
	down  bool
}

func (q *floorQueue) add(item string) {
	q.mu.Lock()
	q.items = append(q.items, item)
	q.mu.Unlock()
	q.ready.Signal()
}

func (q *floorQueue) Get() (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.head == len(q.items) && !q.down {
		q.ready.Wait()
	}
	if q.head == len(q.items) {
		return "", true
	}
	item := q.items[q.head]
	q.items[q.head] = ""
	if q.head++; q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	return item, false
}

// Done takes the lock, as a queue's Done does.
func (q *floorQueue) Done(string) {
	q.mu.Lock()
	q.mu.Unlock() //nolint:staticcheck // an empty critical section on purpose
}

func (q *floorQueue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) - q.head
}

func (q *floorQueue) shutDown() {
	q.mu.Lock()
	q.down = true
	q.mu.Unlock()
	q.ready.Broadcast()
}

func parallel(b *testing.B, workers int, add func(q *workqueue.Queue[string], i int, key string)) {
	q := workqueue.New[string]()
	benchload.Parallel(b, q, workers, benchKeys, func(i int, key string) { add(q, i, key) }, q.ShutDownWithDrain)
}

// BenchmarkAddAfter delays n distinct items by pseudo-random delays up to 10 minutes, then moves
// the fake clock past them and hands every item out. One op is the whole batch; ns/item is per
// item.
func BenchmarkAddAfter(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = "namespace/object-" + strconv.Itoa(i)
		}
		b.Run("items="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				clk := testingclock.NewFakeClock(time.Unix(0, 0))
				q := workqueue.New(workqueue.WithClock[string](clk))
				rng := rand.New(rand.NewPCG(1, 2))
				for _, k := range keys {
					q.AddAfter(k, time.Duration(1+rng.Int64N(int64(10*time.Minute))))
				}
				clk.Step(10 * time.Minute)
				for range n {
					k, _ := q.Get()
					q.Done(k)
				}
				q.ShutDown()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/item")
		})
	}
}

// BenchmarkProvenance is one Add+Get+Done by one goroutine with provenance off and on, the
// add naming its cause either way (AddOpts.Cause is ignored when off). allocs/op must be 0
// for both: a record lives in the entry, which the queue recycles.
//   - off: WithProvenance not given; GetWithRecord returns a zero record.
//   - on: each add merges a cause (an event's, as a controller names it), GetWithRecord hands
//     the record out.
//   - on/dedup: four adds merge into one record per Get.
func BenchmarkProvenance(b *testing.B) {
	cause := workqueue.Cause{Kind: 1, Detail: 2, Source: "pods", Namespace: "ns", Name: "pod"}
	run := func(b *testing.B, q *workqueue.Queue[string], adds int) {
		defer q.ShutDown()
		loop := func(i int) {
			for range adds {
				q.AddWithOpts(workqueue.AddOpts{Cause: cause}, benchKeys[i&1023])
			}
			k, _, _ := q.GetWithRecord()
			q.Done(k)
		}
		for i := range 2048 {
			loop(i)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			loop(i)
		}
	}
	b.Run("provenance=off", func(b *testing.B) { run(b, workqueue.New[string](), 1) })
	b.Run("provenance=on", func(b *testing.B) { run(b, workqueue.New(workqueue.WithProvenance[string]()), 1) })
	b.Run("provenance=off/dedup=4", func(b *testing.B) { run(b, workqueue.New[string](), 4) })
	b.Run("provenance=on/dedup=4", func(b *testing.B) { run(b, workqueue.New(workqueue.WithProvenance[string]()), 4) })
}

// BenchmarkBurst is a controller's start-up: 8 producers add 4·10^5 distinct keys, with no
// throttle, into an empty queue while 8 consumers take them. ns/item is per key.
//   - get-done: the consumers call Get and Done, as client-go's workers do.
//   - worker-loop: DoneAndTryGet, as ctrlkit's controllers do.
func BenchmarkBurst(b *testing.B) {
	keys := manyKeys(400_000)
	add, shutdown := (*workqueue.Queue[string]).Add, (*workqueue.Queue[string]).ShutDown
	b.Run("loop=get-done", func(b *testing.B) { benchload.Burst(b, newQueue, add, shutdown, 8, 8, keys) })
	b.Run("loop=worker", func(b *testing.B) { benchload.BurstWorkerLoop(b, newQueue, add, shutdown, 8, 8, keys) })
}

// BenchmarkFill adds n distinct keys to an empty queue, then Gets and Dones them all, from one
// goroutine. ns/item is per key; its growth from 10^4 to 10^6 is what the table and rings cost
// as the queue deepens.
func BenchmarkFill(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		keys := manyKeys(n)
		b.Run("items="+strconv.Itoa(n), func(b *testing.B) {
			benchload.Fill(b, newQueue, (*workqueue.Queue[string]).Add, (*workqueue.Queue[string]).ShutDown, keys)
		})
		b.Run("items="+strconv.Itoa(n)+"/reused", func(b *testing.B) {
			q := newQueue()
			defer q.ShutDown()
			benchload.Fill(b, func() *workqueue.Queue[string] { return q }, (*workqueue.Queue[string]).Add, func(*workqueue.Queue[string]) {}, keys)
		})
		// A flow per namespace: 97 deep flows, drained in turns.
		b.Run("items="+strconv.Itoa(n)+"/flows", func(b *testing.B) {
			newFlows := func() *workqueue.Queue[string] { return workqueue.New(workqueue.WithFlows(namespaceOf)) }
			benchload.Fill(b, newFlows, (*workqueue.Queue[string]).Add, (*workqueue.Queue[string]).ShutDown, keys)
		})
	}
}

func manyKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "namespace-" + strconv.Itoa(i%97) + "/object-" + strconv.Itoa(i)
	}
	return keys
}

func newQueue() *workqueue.Queue[string] { return workqueue.New[string]() }
