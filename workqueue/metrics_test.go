package workqueue_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kworkqueue "k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/workqueue"
)

// testMetric records what the queue reports; notify, when set, receives a value per update.
type testMetric struct {
	mu            sync.Mutex
	inc, dec      int64
	set           float64
	observedValue float64
	observedCount int
	notify        chan struct{}
}

func (m *testMetric) Inc()          { m.update(func() { m.inc++ }) }
func (m *testMetric) Dec()          { m.update(func() { m.dec++ }) }
func (m *testMetric) Set(f float64) { m.update(func() { m.set = f }) }
func (m *testMetric) Observe(f float64) {
	m.update(func() { m.observedValue = f; m.observedCount++ })
}

func (m *testMetric) update(f func()) {
	m.mu.Lock()
	f()
	ch := m.notify
	m.mu.Unlock()
	if ch != nil {
		ch <- struct{}{}
	}
}

func (m *testMetric) setNotify(ch chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.notify = ch
}

func (m *testMetric) gauge() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.set != 0 {
		return m.set
	}
	return float64(m.inc - m.dec)
}

func (m *testMetric) observation() (float64, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.observedValue, m.observedCount
}

type testMetricsProvider struct {
	mu                                                           sync.Mutex
	created                                                      []string
	depth, adds, latency, duration, unfinished, longest, retries testMetric
}

func (p *testMetricsProvider) record(kind, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.created = append(p.created, kind+":"+name)
}

func (p *testMetricsProvider) NewDepthMetric(name string) kworkqueue.GaugeMetric {
	p.record("depth", name)
	return &p.depth
}

func (p *testMetricsProvider) NewAddsMetric(name string) kworkqueue.CounterMetric {
	p.record("adds", name)
	return &p.adds
}

func (p *testMetricsProvider) NewLatencyMetric(name string) kworkqueue.HistogramMetric {
	p.record("latency", name)
	return &p.latency
}

func (p *testMetricsProvider) NewWorkDurationMetric(name string) kworkqueue.HistogramMetric {
	p.record("duration", name)
	return &p.duration
}

func (p *testMetricsProvider) NewUnfinishedWorkSecondsMetric(name string) kworkqueue.SettableGaugeMetric {
	p.record("unfinished", name)
	return &p.unfinished
}

func (p *testMetricsProvider) NewLongestRunningProcessorSecondsMetric(name string) kworkqueue.SettableGaugeMetric {
	p.record("longest", name)
	return &p.longest
}

func (p *testMetricsProvider) NewRetriesMetric(name string) kworkqueue.CounterMetric {
	p.record("retries", name)
	return &p.retries
}

var _ kworkqueue.MetricsProvider = (*testMetricsProvider)(nil)

func TestMetricsOnlyWithNameAndProvider(t *testing.T) {
	mp := &testMetricsProvider{}
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	q := workqueue.New(workqueue.WithMetricsProvider[string](mp), workqueue.WithClock[string](clk)) // no name
	q.Add("a")
	q.AddAfter("b", 0)
	assert.Empty(t, mp.created, "an unnamed queue reports no metrics")
	assert.False(t, clk.HasWaiters(), "and runs no unfinished-work ticker")
	q.ShutDown()

	clk = testingclock.NewFakeClock(time.Unix(0, 0))
	q = workqueue.New(workqueue.WithName[string]("named"), workqueue.WithClock[string](clk)) // no provider
	q.Add("a")
	assert.False(t, clk.HasWaiters())
	q.ShutDown()

	clk = testingclock.NewFakeClock(time.Unix(0, 0))
	q = workqueue.New(workqueue.WithName[string]("named"), workqueue.WithMetricsProvider[string](mp), workqueue.WithClock[string](clk))
	defer q.ShutDown()
	assert.ElementsMatch(t, []string{"depth:named", "adds:named", "latency:named", "duration:named",
		"unfinished:named", "longest:named", "retries:named"}, mp.created)
	assert.True(t, clk.HasWaiters(), "the unfinished-work ticker exists once New returns")
}

// TestUpstreamMetrics is client-go's TestMetrics (its 1 ms update period is 500 ms here).
func TestUpstreamMetrics(t *testing.T) {
	mp := &testMetricsProvider{}
	c := testingclock.NewFakeClock(time.Unix(0, 0))
	q := workqueue.New(workqueue.WithName[string]("test"), workqueue.WithClock[string](c), workqueue.WithMetricsProvider[string](mp))
	defer q.ShutDown()

	q.Add("foo")
	assert.Equal(t, 1.0, mp.adds.gauge())
	assert.Equal(t, 1.0, mp.depth.gauge())

	c.Step(50 * time.Microsecond)
	i, _ := q.Get()
	require.Equal(t, "foo", i)
	v, n := mp.latency.observation()
	assert.Equal(t, 5e-05, v)
	assert.Equal(t, 1, n)

	// Add it back while processing; multiple adds of the same item are de-duped.
	for range 5 {
		q.Add(i)
	}
	assert.Equal(t, 2.0, mp.adds.gauge())
	assert.Equal(t, 1.0, mp.depth.gauge(), "one thing remains in the queue")

	c.Step(25 * time.Microsecond)
	q.Done(i)
	v, n = mp.duration.observation()
	assert.Equal(t, 2.5e-05, v)
	assert.Equal(t, 1, n)
	assert.Equal(t, 1.0, mp.depth.gauge())

	i, _ = q.Get() // it should be back on the queue
	require.Equal(t, "foo", i)
	v, n = mp.latency.observation()
	assert.Equal(t, 2.5e-05, v)
	assert.Equal(t, 2, n)

	unfinished, longest := make(chan struct{}, 1), make(chan struct{}, 1)
	mp.unfinished.setNotify(unfinished)
	mp.longest.setNotify(longest)
	c.Step(500 * time.Millisecond)
	<-unfinished
	<-longest
	mp.unfinished.setNotify(nil)
	mp.longest.setNotify(nil)
	assert.Equal(t, .5, mp.unfinished.gauge())
	assert.Equal(t, .5, mp.longest.gauge())

	q.Done(i)
	v, n = mp.duration.observation()
	assert.Equal(t, .5, v)
	assert.Equal(t, 2, n)
}

func TestUnfinishedWorkSumsAndFindsTheOldest(t *testing.T) {
	mp := &testMetricsProvider{}
	c := testingclock.NewFakeClock(time.Unix(0, 0))
	q := workqueue.New(workqueue.WithName[string]("test"), workqueue.WithClock[string](c), workqueue.WithMetricsProvider[string](mp))
	defer q.ShutDown()

	q.Add("old")
	q.Add("young")
	q.Add("finished")
	mustGet(t, q, "old")
	c.Step(time.Second)
	mustGet(t, q, "young")
	mustGet(t, q, "finished")
	q.Done("finished")

	longest := make(chan struct{}, 1)
	mp.longest.setNotify(longest)
	c.Step(500 * time.Millisecond)
	<-longest
	mp.longest.setNotify(nil)
	assert.Equal(t, 1.5+0.5, mp.unfinished.gauge())
	assert.Equal(t, 1.5, mp.longest.gauge())
}

// TestUpstreamMetricShutdown: no unfinished-work update after ShutDown.
func TestUpstreamMetricShutdown(t *testing.T) {
	mp := &testMetricsProvider{}
	c := testingclock.NewFakeClock(time.Unix(0, 0))
	q := workqueue.New(workqueue.WithName[string]("test"), workqueue.WithClock[string](c), workqueue.WithMetricsProvider[string](mp))
	ch := make(chan struct{}, 1)
	mp.unfinished.setNotify(ch)
	c.Step(500 * time.Millisecond)
	<-ch
	q.ShutDown() // returns after the metrics goroutine has exited
	c.Step(time.Hour)
	select {
	case <-ch:
		t.Error("unexpected update after shutdown")
	default:
	}
}

func TestRetriesMetricCountsDelayedAdds(t *testing.T) {
	mp := &testMetricsProvider{}
	c := testingclock.NewFakeClock(time.Unix(0, 0))
	q := workqueue.New(workqueue.WithName[string]("test"), workqueue.WithClock[string](c), workqueue.WithMetricsProvider[string](mp))
	defer q.ShutDown()

	q.Add("plain") // not a retry
	q.AddAfter("a", time.Second)
	q.AddAfter("b", 0) // client-go counts every AddAfter
	q.AddRateLimited("c")
	q.AddWithOpts(workqueue.AddOpts{After: time.Second}, "d", "e")
	q.AddWithOpts(workqueue.AddOpts{RateLimited: true}, "f")
	q.AddWithOpts(workqueue.AddOpts{Priority: 1}, "g") // not a retry
	assert.Equal(t, 6.0, mp.retries.gauge())
}

func TestDepthCountsDelayedItemsWhenTheyBecomeReady(t *testing.T) {
	mp := &testMetricsProvider{}
	c := testingclock.NewFakeClock(time.Unix(0, 0))
	q := workqueue.New(workqueue.WithName[string]("test"), workqueue.WithClock[string](c), workqueue.WithMetricsProvider[string](mp))
	defer q.ShutDown()

	q.AddAfter("a", time.Second)
	assert.Equal(t, 0.0, mp.depth.gauge())
	c.Step(time.Second)
	assert.Equal(t, 1, q.Len())
	assert.Equal(t, 1.0, mp.depth.gauge())
	assert.Equal(t, 1.0, mp.adds.gauge())
	mustGet(t, q, "a")
	v, _ := mp.latency.observation()
	assert.Equal(t, 0.0, v, "latency counts from when the item became ready")
	assert.Equal(t, 0.0, mp.depth.gauge())
}

// priorityProvider is a testMetricsProvider that also reports the depth per
// priority.
type priorityProvider struct {
	testMetricsProvider
	mu    sync.Mutex
	depth map[int]int
}

func (p *priorityProvider) NewDepthMetricWithPriority(string) workqueue.DepthMetricWithPriority {
	return p
}

func (p *priorityProvider) Inc(priority int) { p.mu.Lock(); p.depth[priority]++; p.mu.Unlock() }
func (p *priorityProvider) Dec(priority int) { p.mu.Lock(); p.depth[priority]--; p.mu.Unlock() }

func (p *priorityProvider) snapshot() map[int]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[int]int{}
	for k, v := range p.depth {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// A provider with the per-priority depth (controller-runtime's interface)
// gets each ready item counted under the priority it waits at: raising an
// item's priority, queued or while it is processed, moves its count; Get
// takes it out. The plain depth gauge is not used then.
func TestDepthByPriority(t *testing.T) {
	p := &priorityProvider{depth: map[int]int{}}
	q := workqueue.New[string](workqueue.WithName[string]("prio"), workqueue.WithMetricsProvider[string](p))
	defer q.ShutDown()

	q.Add("a")
	q.AddWithOpts(workqueue.AddOpts{Priority: 5}, "b")
	assert.Equal(t, map[int]int{0: 1, 5: 1}, p.snapshot())
	q.AddWithOpts(workqueue.AddOpts{Priority: 10}, "a") // raised while queued
	assert.Equal(t, map[int]int{5: 1, 10: 1}, p.snapshot())

	item, _ := q.Get()
	require.Equal(t, "a", item)
	assert.Equal(t, map[int]int{5: 1}, p.snapshot())
	q.Add("a") // dirty while processing: counted at 0
	assert.Equal(t, map[int]int{0: 1, 5: 1}, p.snapshot())
	q.AddWithOpts(workqueue.AddOpts{Priority: 3}, "a") // raised while processing
	assert.Equal(t, map[int]int{3: 1, 5: 1}, p.snapshot())
	q.Done("a") // back in the queue at 3: still counted there
	assert.Equal(t, map[int]int{3: 1, 5: 1}, p.snapshot())

	for range 2 {
		item, _ := q.Get()
		q.Done(item)
	}
	assert.Empty(t, p.snapshot())
	assert.Zero(t, p.testMetricsProvider.depth.gauge(), "the plain depth gauge is not used")
}
