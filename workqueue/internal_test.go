package workqueue

import (
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	kworkqueue "k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"
)

// TestMain fails the package if any test leaves a goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const waitTimeout = 10 * time.Second

func newTestQueue(t *testing.T, opts ...Option[string]) (*Queue[string], *testingclock.FakeClock) {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	q := New(append([]Option[string]{WithClock[string](clk)}, opts...)...)
	t.Cleanup(q.ShutDown)
	return q, clk
}

func drain(q *Queue[string]) []string {
	var out []string
	for q.Len() > 0 {
		item, _ := q.Get()
		out = append(out, item)
		q.Done(item)
	}
	return out
}

// assertEmptyInside checks that nothing inside the queue still refers to an item.
func assertEmptyInside(t *testing.T, q *Queue[string]) {
	t.Helper()
	q.mu.Lock()
	defer q.mu.Unlock()
	assert.Zero(t, q.items.len(), "entries")
	q.items.all(func(*entry[string]) { t.Error("table keeps an entry") })
	assert.Zero(t, q.queued)
	assert.Zero(t, q.processing)
	assert.Zero(t, q.delayed.len())
	for _, d := range q.delayed.slots[:cap(q.delayed.slots)] {
		assert.Nil(t, d.e, "heap slot keeps an entry")
	}
	rings := slices.Collect(maps.Values(q.ready.byPrio))
	for _, l := range q.ready.small {
		if l != nil {
			rings = append(rings, l)
		}
	}
	for _, l := range rings {
		for _, s := range l.buf {
			if s.e != nil {
				assert.Zero(t, s.e.item, "ring slot keeps an item (priority %d)", l.prio)
			}
		}
		for _, f := range l.flows {
			assert.Zero(t, f.n, "flow %q keeps slots at priority %d", f.key, l.prio)
		}
		assert.Nil(t, l.rot.front, "a rotation left at priority %d", l.prio)
		assert.LessOrEqual(t, l.nIdle, keepIdle)
	}
	for _, f := range q.ready.free {
		for _, s := range f.buf {
			assert.Nil(t, s.e, "a free flow keeps a slot")
		}
	}
	for _, ch := range q.items.arena.chunks {
		for i := range ch.used {
			assert.Zero(t, ch.e[i].item, "a recycled entry keeps its item")
		}
	}
	assert.Zero(t, q.nRetired, "retired entries not flushed")
	for _, e := range q.handed {
		if e != nil {
			assert.Zero(t, e.item, "handed keeps an item")
		}
	}
}

type payload struct{ data [64]byte }

// collectable registers a finalizer on obj and returns a function reporting whether it ran.
func collectable(obj *payload) func() bool {
	var done atomic.Bool
	runtime.SetFinalizer(obj, func(*payload) { done.Store(true) })
	return done.Load
}

// requireCollected waits until every finalizer collectable registered has run.
func requireCollected(t *testing.T, collected []func() bool, msg string) {
	t.Helper()
	require.Eventually(t, func() bool {
		runtime.GC()
		for _, done := range collected {
			if !done() {
				return false
			}
		}
		return true
	}, waitTimeout, 10*time.Millisecond, msg)
}

// TestItemsAreCollectableOnEveryPath sends pointer items through every path (plain, re-added
// while processing, priority raised, delayed, rate-limited then forgotten, dropped by shutdown,
// a burst that grows and shrinks the rings) and checks the queue keeps none of them alive.
func TestItemsAreCollectableOnEveryPath(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	q := New(WithClock[*payload](clk))
	var collected []func() bool
	newItem := func() *payload {
		p := &payload{}
		collected = append(collected, collectable(p))
		return p
	}
	process := func() {
		for q.Len() > 0 {
			item, _ := q.Get()
			q.Done(item)
		}
	}

	q.Add(newItem())
	process()

	dirty := newItem()
	q.Add(dirty)
	item, _ := q.Get()
	q.Add(dirty)
	q.Done(item)
	process()

	for i := range 3 * compactAt {
		p := newItem()
		q.AddWithOpts(AddOpts{Priority: 0}, p)
		q.AddWithOpts(AddOpts{Priority: 1 + i%3}, p) // leaves a stale slot behind
	}
	process()

	q.AddAfter(newItem(), time.Second)
	q.AddWithOpts(AddOpts{After: time.Second, Priority: 2}, newItem())
	clk.Step(time.Second)
	process()

	limited := newItem()
	q.AddRateLimited(limited)
	clk.Step(time.Minute)
	process()
	q.Forget(limited) // the rate limiter itself tracks the item until Forget

	for range 5000 {
		q.Add(newItem())
	}
	process()
	limited, dirty, item = nil, nil, nil

	q.AddAfter(newItem(), time.Hour) // dropped by ShutDown
	q.ShutDown()

	runtime.KeepAlive(q)
	requireCollected(t, collected, "an item added then Done was not garbage collected")
	runtime.KeepAlive(q)
}

func TestNothingRefersToItemsAfterProcessing(t *testing.T) {
	q, clk := newTestQueue(t)
	for i := range 3000 {
		k := strconv.Itoa(i)
		q.AddWithOpts(AddOpts{Priority: i % 4}, k)
		q.AddWithOpts(AddOpts{Priority: 5}, k)
		q.AddAfter(k, time.Duration(i)*time.Millisecond)
	}
	for q.Len() > 0 || q.delayed.len() > 0 {
		clk.Step(time.Second)
		drain(q)
	}
	assertEmptyInside(t, q)
}

// queueGoroutines counts the goroutines started by queues (delay and metrics loops), whether
// they have begun running or not.
func queueGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			stacks := string(buf[:n])
			return strings.Count(stacks, "created by github.com/ctrlkit/ctrlkit/workqueue.New[") +
				strings.Count(stacks, "created by github.com/ctrlkit/ctrlkit/workqueue.(*Queue[")
		}
		buf = make([]byte, 2*len(buf))
	}
}

func TestOneGoroutineServesAllDelays(t *testing.T) {
	q, clk := newTestQueue(t)
	q.Add("plain")
	assert.Zero(t, queueGoroutines(), "no goroutine until something is delayed")
	for i := range 10_000 {
		q.AddAfter(strconv.Itoa(i), time.Duration(1+i%100)*time.Millisecond)
	}
	assert.Equal(t, 1, queueGoroutines(), "10^4 delays, one goroutine")
	clk.Step(100 * time.Millisecond)
	assert.Len(t, drain(q), 10_001)
	q.ShutDown()
	// As in TestShutDownStopsEveryGoroutine: the runtime may list the goroutine for a moment
	// after ShutDown returned (it failed so in one clean-clone CI run).
	assert.Eventually(t, func() bool { return queueGoroutines() == 0 }, waitTimeout, time.Millisecond)
}

func TestShutDownStopsEveryGoroutine(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	for _, shutDown := range []func(*Queue[string]){(*Queue[string]).ShutDown, (*Queue[string]).ShutDownWithDrain} {
		q := New(WithClock[string](clk), WithName[string]("leak"), WithMetricsProvider[string](noopProvider{}))
		q.AddAfter("a", time.Hour)
		assert.Equal(t, 2, queueGoroutines())
		shutDown(q)
		// ShutDown returns once its goroutines are past their last use of the queue
		// (wg.Done); the runtime may list them for a moment more while they return.
		assert.Eventually(t, func() bool { return queueGoroutines() == 0 }, waitTimeout, time.Millisecond)
	}
	goleak.VerifyNone(t)
}

// TestDrainWaitsWhileItemsAreQueued is the upstream report (client-go's drain returns while items
// are still queued): once the drain is waiting, it stays waiting until every queued item has been
// handed out and is Done.
func TestDrainWaitsWhileItemsAreQueued(t *testing.T) {
	q, _ := newTestQueue(t)
	q.Add("a")
	q.Add("b")
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		q.ShutDownWithDrain()
	}()
	require.Eventually(t, func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.draining
	}, waitTimeout, time.Millisecond)
	for range 100 {
		runtime.Gosched() // give a wrong implementation every chance to return
	}
	select {
	case <-drained:
		t.Fatal("ShutDownWithDrain returned with two items never handed out")
	default:
	}
	for _, want := range []string{"a", "b"} {
		got, shutdown := q.Get()
		require.False(t, shutdown)
		require.Equal(t, want, got)
		q.Done(got)
	}
	select {
	case <-drained:
	case <-time.After(waitTimeout):
		t.Fatal("ShutDownWithDrain did not return after the last Done")
	}
}

func TestStaleSlotsAreCompacted(t *testing.T) {
	q, _ := newTestQueue(t)
	const n = 1000
	for i := range n {
		q.Add(strconv.Itoa(i))
	}
	for i := range n - 1 { // raise all but the last
		q.AddWithOpts(AddOpts{Priority: 1}, strconv.Itoa(i))
	}
	q.mu.Lock()
	low := q.ready.level(0)
	assert.Less(t, low.n, 2*compactAt, "priority 0 ring still holds %d slots for 1 live item", low.n)
	q.mu.Unlock()
	got := drain(q)
	require.Len(t, got, n)
	for i := range n - 1 {
		assert.Equal(t, strconv.Itoa(i), got[i])
	}
	assert.Equal(t, strconv.Itoa(n-1), got[n-1])
}

func TestRingsShrinkAfterABurst(t *testing.T) {
	q, _ := newTestQueue(t)
	for i := range 20_000 {
		q.Add(strconv.Itoa(i))
	}
	assert.Len(t, drain(q), 20_000)
	q.mu.Lock()
	defer q.mu.Unlock()
	assert.LessOrEqual(t, len(q.ready.level(0).buf), keepRing)
	assert.LessOrEqual(t, len(q.items.arena.chunks), keepChunks, "chunks kept after the burst")
}

func TestIdleLevelsAreBounded(t *testing.T) {
	q, _ := newTestQueue(t)
	for p := range 1000 {
		q.AddWithOpts(AddOpts{Priority: 10 * p}, strconv.Itoa(p))
	}
	got := drain(q)
	require.Len(t, got, 1000)
	assert.Equal(t, "999", got[0])
	assert.Equal(t, "0", got[999])
	q.mu.Lock()
	defer q.mu.Unlock()
	assert.LessOrEqual(t, len(q.ready.byPrio), keepLevels)
	assert.Empty(t, q.ready.active)
}

// TestSteadyStateAllocatesNothing: once warmed up, a round trip allocates nothing, also with
// priorities and with delayed items pending.
func TestSteadyStateAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	q, _ := newTestQueue(t)
	keys, waiting := make([]string, 64), make([]string, 64)
	for i := range keys {
		keys[i], waiting[i] = "ns/"+strconv.Itoa(i), "waiting/"+strconv.Itoa(i)
		q.AddAfter(waiting[i], time.Hour)
	}
	i := 0
	cases := map[string]func(){
		"plain": func() {
			q.Add(keys[i%len(keys)])
			k, _ := q.Get()
			q.Done(k)
		},
		"priority": func() {
			q.AddWithOpts(AddOpts{Priority: i % 4}, keys[i%len(keys)])
			q.AddWithOpts(AddOpts{Priority: 9}, keys[i%len(keys)])
			k, _ := q.Get()
			q.Done(k)
		},
		"re-add while processing": func() {
			q.Add(keys[i%len(keys)])
			k, _ := q.Get()
			q.Add(k)
			q.Done(k)
			k, _ = q.Get()
			q.Done(k)
		},
		"delay merge": func() {
			q.AddAfter(waiting[i%len(keys)], 2*time.Hour)
			q.Add(keys[i%len(keys)])
			k, _ := q.Get()
			q.Done(k)
		},
	}
	type namespacedName struct{ namespace, name string }
	sq := New[namespacedName]()
	defer sq.ShutDown()
	skeys := make([]namespacedName, 64)
	for i := range skeys {
		skeys[i] = namespacedName{"ns", strconv.Itoa(i)}
	}
	cases["struct keys"] = func() {
		sq.Add(skeys[i%len(skeys)])
		k, _ := sq.Get()
		sq.Done(k)
	}
	pq := New[*payload]()
	defer pq.ShutDown()
	pkeys := make([]*payload, 64)
	for i := range pkeys {
		pkeys[i] = &payload{}
	}
	cases["pointer keys"] = func() {
		pq.Add(pkeys[i%len(pkeys)])
		k, _ := pq.Get()
		pq.Done(k)
	}
	// With provenance: the record lives in the recycled entry, including a delayed add's.
	prq := New(WithProvenance[string]())
	defer prq.ShutDown()
	cause := Cause{Kind: 1, Detail: 2, Source: "pods", Namespace: "ns", Name: "pod"}
	cases["provenance"] = func() {
		prq.AddWithOpts(AddOpts{Cause: cause, After: time.Hour}, waiting[i%len(waiting)])
		prq.AddWithOpts(AddOpts{Cause: cause}, keys[i%len(keys)], keys[(i+1)%len(keys)])
		prq.Add(keys[i%len(keys)])
		k, rec, _ := prq.GetWithRecord()
		k, next, ok := prq.DoneAndTryGetWithRecord(k)
		if !ok || rec.Total != 2 || next.Total != 1 {
			t.Fatalf("records %+v, %+v, %v", rec, next, ok)
		}
		prq.Done(k)
	}
	aq := New[any]()
	defer aq.ShutDown()
	cases["interface keys"] = func() {
		aq.Add(pkeys[i%len(pkeys)])
		k, _ := aq.Get()
		aq.Done(k)
	}
	for name, f := range cases {
		for range 100 { // warm up rings, free list and table
			f()
			i++
		}
		allocs := testing.AllocsPerRun(1000, func() { f(); i++ })
		assert.Zero(t, allocs, "%s allocates", name)
	}
}

type noopMetric struct{}

func (noopMetric) Inc()            {}
func (noopMetric) Dec()            {}
func (noopMetric) Set(float64)     {}
func (noopMetric) Observe(float64) {}

type noopProvider struct{}

func (noopProvider) NewDepthMetric(string) kworkqueue.GaugeMetric       { return noopMetric{} }
func (noopProvider) NewAddsMetric(string) kworkqueue.CounterMetric      { return noopMetric{} }
func (noopProvider) NewLatencyMetric(string) kworkqueue.HistogramMetric { return noopMetric{} }
func (noopProvider) NewWorkDurationMetric(string) kworkqueue.HistogramMetric {
	return noopMetric{}
}
func (noopProvider) NewUnfinishedWorkSecondsMetric(string) kworkqueue.SettableGaugeMetric {
	return noopMetric{}
}
func (noopProvider) NewLongestRunningProcessorSecondsMetric(string) kworkqueue.SettableGaugeMetric {
	return noopMetric{}
}
func (noopProvider) NewRetriesMetric(string) kworkqueue.CounterMetric { return noopMetric{} }

// TestItemsAreCollectableWhileRetired: in a busy queue the slot of an item Done leaves the
// table with a batch, but the queue lets go of the item itself at Done.
func TestItemsAreCollectableWhileRetired(t *testing.T) {
	q := New[*payload]()
	defer q.ShutDown()
	busy := &payload{}
	q.Add(busy)
	if item, _ := q.Get(); item != busy {
		t.Fatal("the busy item was not handed out")
	}
	var collected []func() bool
	for range 3 {
		p := &payload{}
		collected = append(collected, collectable(p))
		q.Add(p)
		item, _ := q.Get()
		q.Done(item)
	}
	q.mu.Lock()
	retired := q.nRetired
	q.mu.Unlock()
	require.Equal(t, 3, retired, "the queue is busy: the entries wait for their batch")
	requireCollected(t, collected, "an item Done in a busy queue was not garbage collected")
	q.Done(busy)
	runtime.KeepAlive(busy)
}

// TestDoneRetiresInBatches: while the queue is busy, the entries Done finishes stay in the table
// until retireBatch of them have gathered; an add of one of their items meanwhile makes a new
// entry; they leave at once when the queue goes idle, a getter waits or the queue shuts down.
func TestDoneRetiresInBatches(t *testing.T) {
	entries := func(q *Queue[string]) int {
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.items.len()
	}
	busy := func(t *testing.T) *Queue[string] {
		q, _ := newTestQueue(t)
		q.Add("busy") // kept processing: the queue is never idle
		item, _ := q.Get()
		require.Equal(t, "busy", item)
		return q
	}
	// busyRetired is busy with "a" handed out and Done: retired, still in the table.
	busyRetired := func(t *testing.T) *Queue[string] {
		q := busy(t)
		q.Add("a")
		item, _ := q.Get()
		q.Done(item)
		require.Equal(t, 2, entries(q))
		return q
	}

	t.Run("batch", func(t *testing.T) {
		q := busy(t)
		for i := range retireBatch - 1 {
			q.Add(strconv.Itoa(i))
			item, _ := q.Get()
			q.Done(item)
		}
		assert.Equal(t, retireBatch, entries(q), "busy and the finished ones, retired")
		assert.Zero(t, q.Len())
		q.Add("last")
		item, _ := q.Get()
		q.Done(item)
		assert.Equal(t, 1, entries(q), "only busy once the batch is full")
		q.Done("busy")
		assertEmptyInside(t, q)
	})

	t.Run("re-added while retired", func(t *testing.T) {
		q := busyRetired(t)
		q.Add("a")
		q.Add("a")
		assert.Equal(t, 1, q.Len(), "a retired item added twice is queued once")
		assert.Equal(t, 3, entries(q), "busy, the retired entry and a new one")
		item, _ := q.Get()
		require.Equal(t, "a", item)
		q.Add("a") // dirty
		q.Done("a")
		item, _ = q.Get()
		require.Equal(t, "a", item, "re-added while processing: handed out again after Done")
		q.Done("a")
		q.Done("a") // not processing: nothing
		q.AddAfter("a", time.Hour)
		q.mu.Lock()
		q.flushRetiredLocked()
		q.mu.Unlock()
		assert.Equal(t, 2, entries(q), "an entry waiting for a delay stays in the table")
		q.ShutDown()
		q.Done("busy")
		assertEmptyInside(t, q)
	})

	t.Run("idle", func(t *testing.T) {
		q, _ := newTestQueue(t)
		for i := range 10 {
			q.Add(strconv.Itoa(i))
		}
		drain(q)
		assertEmptyInside(t, q)
	})

	t.Run("waiting getter", func(t *testing.T) {
		q := busyRetired(t)
		got := make(chan string, 1) // the getter never blocks, even if the test fails first
		go func() {
			item, _ := q.Get()
			got <- item
		}()
		require.Eventually(t, func() bool { return entries(q) == 1 }, waitTimeout, time.Millisecond,
			"a Get that waits takes the retired entries out")
		q.Add("b")
		assert.Equal(t, "b", <-got)
		q.Done("b")
		q.Done("busy")
		assertEmptyInside(t, q)
	})

	t.Run("shutdown", func(t *testing.T) {
		q := busyRetired(t)
		q.ShutDown()
		assert.Equal(t, 1, entries(q))
		q.Done("busy")
		assertEmptyInside(t, q)
	})

	t.Run("many processing", func(t *testing.T) {
		// More items out at once than handed has slots: Done finds some through the table.
		q, _ := newTestQueue(t)
		const n = 4 * handedSize
		for i := range n {
			q.Add(strconv.Itoa(i))
		}
		out := make([]string, 0, n)
		for range n {
			item, _ := q.Get()
			out = append(out, item)
		}
		for _, item := range out {
			q.Add(item) // dirty
		}
		for _, item := range out {
			q.Done(item)
		}
		assert.Equal(t, n, q.Len(), "every Done found its entry")
		drain(q)
		assertEmptyInside(t, q)
	})
}
