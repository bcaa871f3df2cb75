package workqueue

import (
	"time"

	kworkqueue "k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// unfinishedWorkPeriod is how often the unfinished-work gauges are refreshed (client-go's value).
const unfinishedWorkPeriod = 500 * time.Millisecond

// queueMetrics reports through a client-go MetricsProvider with client-go's meaning of each
// metric. The queue holds a nil *queueMetrics when metrics are off, so the hot path pays one nil
// check. Timestamps live in the entries, not in maps of their own, and the entries being
// processed are linked in a list for the unfinished-work gauges. All methods run under the
// queue's lock.
type queueMetrics[T comparable] struct {
	clock                   clock.PassiveClock
	depth                   kworkqueue.GaugeMetric  // nil when byPriority is set
	byPriority              DepthMetricWithPriority // the provider's, when it has one
	adds                    kworkqueue.CounterMetric
	latency                 kworkqueue.HistogramMetric
	workDuration            kworkqueue.HistogramMetric
	unfinishedWorkSeconds   kworkqueue.SettableGaugeMetric
	longestRunningProcessor kworkqueue.SettableGaugeMetric
	retries                 kworkqueue.CounterMetric

	processing *entry[T] // head of the list of entries being processed
}

func newQueueMetrics[T comparable](p kworkqueue.MetricsProvider, name string, c clock.PassiveClock) *queueMetrics[T] {
	if p == nil || name == "" {
		return nil
	}
	m := &queueMetrics[T]{
		clock:                   c,
		adds:                    p.NewAddsMetric(name),
		latency:                 p.NewLatencyMetric(name),
		workDuration:            p.NewWorkDurationMetric(name),
		unfinishedWorkSeconds:   p.NewUnfinishedWorkSecondsMetric(name),
		longestRunningProcessor: p.NewLongestRunningProcessorSecondsMetric(name),
		retries:                 p.NewRetriesMetric(name),
	}
	if pp, ok := p.(MetricsProviderWithPriority); ok {
		m.byPriority = pp.NewDepthMetricWithPriority(name)
	} else {
		m.depth = p.NewDepthMetric(name)
	}
	return m
}

// MetricsProviderWithPriority is a MetricsProvider that reports the depth per
// priority: a queue given one (WithMetricsProvider) counts each ready item
// under the priority it waits at. The names are controller-runtime's
// (pkg/controller/priorityqueue), so one provider serves both.
type MetricsProviderWithPriority interface {
	kworkqueue.MetricsProvider
	NewDepthMetricWithPriority(name string) DepthMetricWithPriority
}

// DepthMetricWithPriority is the depth gauge of one queue, per priority.
type DepthMetricWithPriority interface {
	Inc(priority int)
	Dec(priority int)
}

func (m *queueMetrics[T]) depthInc(prio int) {
	if m.byPriority != nil {
		m.byPriority.Inc(prio)
		return
	}
	m.depth.Inc()
}

func (m *queueMetrics[T]) depthDec(prio int) {
	if m.byPriority != nil {
		m.byPriority.Dec(prio)
		return
	}
	m.depth.Dec()
}

// reprioritized records that e, counted in the depth at priority old, now
// waits at e.prio.
func (m *queueMetrics[T]) reprioritized(e *entry[T], old int) {
	if m.byPriority != nil {
		m.byPriority.Dec(old)
		m.byPriority.Inc(e.prio)
	}
}

// entryMetrics is the per-entry part of the metrics.
type entryMetrics[T comparable] struct {
	addedAt, startedAt time.Time
	prev, next         *entry[T] // the list of entries being processed
}

// added records that e became dirty (needs processing).
func (m *queueMetrics[T]) added(e *entry[T]) {
	m.adds.Inc()
	m.depthInc(e.prio)
	if e.mx == nil {
		e.mx = new(entryMetrics[T])
	}
	e.mx.addedAt = m.clock.Now()
}

// started records that e was handed to a worker.
func (m *queueMetrics[T]) started(e *entry[T]) {
	now := m.clock.Now()
	m.depthDec(e.prio)
	m.latency.Observe(now.Sub(e.mx.addedAt).Seconds())
	e.mx.startedAt = now
	e.mx.prev, e.mx.next = nil, m.processing
	if m.processing != nil {
		m.processing.mx.prev = e
	}
	m.processing = e
}

// finished records that the worker called Done for e.
func (m *queueMetrics[T]) finished(e *entry[T]) {
	x := e.mx
	m.workDuration.Observe(m.clock.Since(x.startedAt).Seconds())
	if x.prev != nil {
		x.prev.mx.next = x.next
	} else {
		m.processing = x.next
	}
	if x.next != nil {
		x.next.mx.prev = x.prev
	}
	x.prev, x.next = nil, nil
}

func (m *queueMetrics[T]) retry() { m.retries.Inc() }

func (m *queueMetrics[T]) updateUnfinishedWork() {
	var total, oldest float64
	for e := m.processing; e != nil; e = e.mx.next {
		age := m.clock.Since(e.mx.startedAt).Seconds()
		total += age
		if age > oldest {
			oldest = age
		}
	}
	m.unfinishedWorkSeconds.Set(total)
	m.longestRunningProcessor.Set(oldest)
}
