package controller

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	kworkqueue "k8s.io/client-go/util/workqueue"

	"github.com/ctrlkit/ctrlkit/workqueue"
)

// Reconcile results, the values of the "result" label of
// controller_runtime_reconcile_total (controller-runtime's values: a terminal
// error counts as "error", and in controller_runtime_terminal_reconcile_errors_total).
const (
	resultSuccess      = "success"
	resultError        = "error"
	resultRequeue      = "requeue"
	resultRequeueAfter = "requeue_after"
)

var allResults = []string{resultSuccess, resultError, resultRequeue, resultRequeueAfter}

// Metrics holds the Prometheus collectors of every controller and queue that
// report into one registry. Build one per registry with NewMetrics; a
// manager.Manager builds its own and runs each controller built without one
// with it (WithMetrics).
//
// The series are controller-runtime's, names, labels and buckets, so its
// dashboards and alerts work unchanged (docs/metrics.md has the table):
//
//	controller_runtime_reconcile_total{controller,result}       counter, result is success|error|requeue|requeue_after
//	controller_runtime_reconcile_errors_total{controller}       counter, every error (terminal ones included)
//	controller_runtime_terminal_reconcile_errors_total{controller}
//	controller_runtime_reconcile_panics_total{controller}
//	controller_runtime_reconcile_time_seconds{controller}       histogram
//	controller_runtime_reconcile_timeouts_total{controller}     Options.ReconcileTimeout fired
//	controller_runtime_max_concurrent_reconciles{controller}    gauge, workers configured
//	controller_runtime_active_workers{controller}               gauge, workers inside Reconcile now
//	workqueue_depth{name,controller,priority}                   priority "0", "5", ... (ctrlkit's queue), "" (a client-go queue)
//	workqueue_adds_total, workqueue_queue_duration_seconds,
//	workqueue_work_duration_seconds, workqueue_unfinished_work_seconds,
//	workqueue_longest_running_processor_seconds, workqueue_retries_total{name,controller}
//
// and series controller-runtime has no counterpart for, so they carry
// ctrlkit's prefix:
//
//	ctrlkit_controller_retries_exhausted_total{controller}      keys that failed after their backoff retries (Options.Retry)
//	ctrlkit_controller_slow_retries_total{controller}           failures answered by a retry at Options.Retry's Every interval
//	ctrlkit_controller_slow_retry_keys{controller}              gauge, keys retried slowly now (Stats.SlowRetrying)
//	ctrlkit_controller_fence_timeouts_total{controller}         write fences released by their TTL (Options.Fences)
//	ctrlkit_controller_paced_total{controller,pace}             keys held back by Options.Debounce, MinInterval or Limiters
//	ctrlkit_controller_cache_lag_seconds{controller,informer}    gauge, how long an informer has not reached a consistent read, once beyond Options.Freshness.MaxLag (0 when caught up)
//
// QueueMetrics gives its queue metrics to a queue built by hand.
type Metrics struct {
	reconcileTotal   *prometheus.CounterVec
	reconcileErrors  *prometheus.CounterVec
	terminalErrors   *prometheus.CounterVec
	panics           *prometheus.CounterVec
	reconcileTime    *prometheus.HistogramVec
	timeouts         *prometheus.CounterVec
	workers          *prometheus.GaugeVec
	activeWorkers    *prometheus.GaugeVec
	retriesExhausted *prometheus.CounterVec
	slowRetries      *prometheus.CounterVec
	slowRetryKeys    *prometheus.GaugeVec
	fenceTimeouts    *prometheus.CounterVec
	paced            *prometheus.CounterVec
	cacheLag         *prometheus.GaugeVec

	depth          *prometheus.GaugeVec
	adds           *prometheus.CounterVec
	latency        *prometheus.HistogramVec
	workDuration   *prometheus.HistogramVec
	unfinished     *prometheus.GaugeVec
	longestRunning *prometheus.GaugeVec
	retries        *prometheus.CounterVec
}

// NewMetrics creates the collectors and registers them with reg. reg must
// not be nil: ctrlkit never falls back to Prometheus' global registry. It
// fails when the collectors are already registered with reg (use the Metrics
// value you built for it the first time).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, &OptionsError{Field: "Registerer", Reason: "nil; pass a prometheus.Registerer (for example prometheus.NewRegistry())"}
	}
	ctl := []string{"controller"}
	q := []string{"name", "controller"}
	counter := func(name, help string, labels []string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	gauge := func(name, help string, labels []string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	queueHistogram := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: name, Help: help, Buckets: prometheus.ExponentialBuckets(10e-9, 10, 12),
		}, q)
	}
	m := &Metrics{
		reconcileTotal:  counter("controller_runtime_reconcile_total", "Total number of reconciliations per controller", []string{"controller", "result"}),
		reconcileErrors: counter("controller_runtime_reconcile_errors_total", "Total number of reconciliation errors per controller", ctl),
		terminalErrors:  counter("controller_runtime_terminal_reconcile_errors_total", "Total number of terminal reconciliation errors per controller", ctl),
		panics:          counter("controller_runtime_reconcile_panics_total", "Total number of reconciliation panics per controller", ctl),
		reconcileTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "controller_runtime_reconcile_time_seconds", Help: "Length of time per reconciliation per controller",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
				1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60},
		}, ctl),
		timeouts:         counter("controller_runtime_reconcile_timeouts_total", "Total number of reconciliation timeouts per controller", ctl),
		workers:          gauge("controller_runtime_max_concurrent_reconciles", "Maximum number of concurrent reconciles per controller", ctl),
		activeWorkers:    gauge("controller_runtime_active_workers", "Number of currently used workers per controller", ctl),
		retriesExhausted: counter("ctrlkit_controller_retries_exhausted_total", "Keys whose last backoff retry failed (then retried at an interval, or given up), per controller", ctl),
		slowRetries:      counter("ctrlkit_controller_slow_retries_total", "Failed reconciles of keys past their retries, put back after the slow retry interval, per controller", ctl),
		slowRetryKeys:    gauge("ctrlkit_controller_slow_retry_keys", "Keys past their retries that are retried at the slow interval until they succeed, per controller", ctl),
		fenceTimeouts:    counter("ctrlkit_controller_fence_timeouts_total", "Write fences released by their TTL instead of by the informer showing the write, per controller", ctl),
		cacheLag:         gauge("ctrlkit_controller_cache_lag_seconds", "How long an informer a controller reads has not reached a consistent read of the API server, once beyond Options.Freshness.MaxLag (0 once caught up), per controller and informer", []string{"controller", "informer"}),
		paced:            counter("ctrlkit_controller_paced_total", "Keys held back by pacing: their events settling (debounce), Options.MinInterval (min-interval) or a Limiter (its name), per controller and pace", []string{"controller", "pace"}),

		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "workqueue_depth", Help: "Current depth of workqueue by workqueue and priority",
		}, []string{"name", "controller", "priority"}),
		adds:         counter("workqueue_adds_total", "Total number of adds handled by workqueue", q),
		latency:      queueHistogram("workqueue_queue_duration_seconds", "How long in seconds an item stays in workqueue before being requested"),
		workDuration: queueHistogram("workqueue_work_duration_seconds", "How long in seconds processing an item from workqueue takes."),
		unfinished: gauge("workqueue_unfinished_work_seconds", "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. "+
			"Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.", q),
		longestRunning: gauge("workqueue_longest_running_processor_seconds", "How many seconds has the longest running processor for workqueue been running.", q),
		retries:        counter("workqueue_retries_total", "Total number of retries handled by workqueue", q),
	}
	for _, c := range []prometheus.Collector{
		m.reconcileTotal, m.reconcileErrors, m.terminalErrors, m.panics, m.reconcileTime, m.timeouts,
		m.workers, m.activeWorkers, m.retriesExhausted, m.slowRetries, m.slowRetryKeys, m.fenceTimeouts, m.paced, m.cacheLag,
		m.depth, m.adds, m.latency, m.workDuration, m.unfinished, m.longestRunning, m.retries,
	} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, fmt.Errorf("registering ctrlkit metrics: already registered with this registerer (reuse its Metrics): %w", err)
			}
			return nil, fmt.Errorf("registering ctrlkit metrics: %w", err)
		}
	}
	return m, nil
}

// controllerMetrics are one controller's children of the vectors, looked up
// once so the hot path does no label hashing. The zero value (nil Metrics)
// records nothing.
type controllerMetrics struct {
	results   map[string]prometheus.Counter
	errors    prometheus.Counter
	terminal  prometheus.Counter
	duration  prometheus.Observer
	active    prometheus.Gauge
	panics    prometheus.Counter
	timeouts  prometheus.Counter
	exhausted prometheus.Counter
	slow      prometheus.Counter
	slowKeys  prometheus.Gauge
	fenceTTL  prometheus.Counter
	pacedVec  *prometheus.CounterVec
	lagVec    *prometheus.GaugeVec
	name      string
}

func (m *Metrics) forController(name string, workers int) *controllerMetrics {
	if m == nil {
		return nil
	}
	cm := &controllerMetrics{
		results:   make(map[string]prometheus.Counter, len(allResults)),
		errors:    m.reconcileErrors.WithLabelValues(name),
		terminal:  m.terminalErrors.WithLabelValues(name),
		duration:  m.reconcileTime.WithLabelValues(name),
		active:    m.activeWorkers.WithLabelValues(name),
		panics:    m.panics.WithLabelValues(name),
		timeouts:  m.timeouts.WithLabelValues(name),
		exhausted: m.retriesExhausted.WithLabelValues(name),
		slow:      m.slowRetries.WithLabelValues(name),
		slowKeys:  m.slowRetryKeys.WithLabelValues(name),
		fenceTTL:  m.fenceTimeouts.WithLabelValues(name),
		pacedVec:  m.paced,
		lagVec:    m.cacheLag,
		name:      name,
	}
	// Creating every child now makes the series visible (at 0) from the first
	// scrape, so rate() and alerts work before the first error.
	for _, r := range allResults {
		cm.results[r] = m.reconcileTotal.WithLabelValues(name, r)
	}
	m.workers.WithLabelValues(name).Set(float64(workers))
	return cm
}

// cacheLag sets how long informer has lagged (0: caught up).
func (cm *controllerMetrics) cacheLag(informer string, lag time.Duration) {
	if cm != nil {
		cm.lagVec.WithLabelValues(cm.name, informer).Set(lag.Seconds())
	}
}

// paced counts a key held back by pace (debounce, min-interval or a
// Limiter's name).
func (cm *controllerMetrics) paced(pace string) {
	if cm != nil {
		cm.pacedVec.WithLabelValues(cm.name, pace).Inc()
	}
}

func (cm *controllerMetrics) result(r string) {
	if cm != nil {
		cm.results[r].Inc()
	}
}

// failed counts an error: result "error", and the error counters.
func (cm *controllerMetrics) failed(terminal bool) {
	if cm == nil {
		return
	}
	cm.results[resultError].Inc()
	cm.errors.Inc()
	if terminal {
		cm.terminal.Inc()
	}
}

func (cm *controllerMetrics) observe(seconds float64) {
	if cm != nil {
		cm.duration.Observe(seconds)
	}
}

func (cm *controllerMetrics) activeDelta(d float64) {
	if cm != nil {
		cm.active.Add(d)
	}
}

func (cm *controllerMetrics) panicked() {
	if cm != nil {
		cm.panics.Inc()
	}
}

func (cm *controllerMetrics) timedOut() {
	if cm != nil {
		cm.timeouts.Inc()
	}
}

func (cm *controllerMetrics) fenceTimedOut() {
	if cm != nil {
		cm.fenceTTL.Inc()
	}
}

// exhaustedRetries counts a key whose last allowed retry failed.
func (cm *controllerMetrics) exhaustedRetries() {
	if cm != nil {
		cm.exhausted.Inc()
	}
}

func (cm *controllerMetrics) slowRetried() {
	if cm != nil {
		cm.slow.Inc()
	}
}

func (cm *controllerMetrics) setSlowRetryKeys(n int) {
	if cm != nil {
		cm.slowKeys.Set(float64(n))
	}
}

// QueueMetrics returns the provider of the queue metrics (workqueue_*, with
// both the "name" and the "controller" label the queue's name, as in
// controller-runtime), for a queue built by hand: client-go's
// (kworkqueue.TypedRateLimitingQueueConfig.MetricsProvider) or ctrlkit's
// (workqueue.WithMetricsProvider, which reports the depth per priority).
// Controllers built with these Metrics use it themselves.
// A nil Metrics gives nil, which queues take for no metrics.
func (m *Metrics) QueueMetrics() kworkqueue.MetricsProvider {
	if m == nil {
		return nil
	}
	return queueMetrics{m}
}

// queueMetrics is the queue metrics' provider of a Metrics.
type queueMetrics struct{ m *Metrics }

var _ workqueue.MetricsProviderWithPriority = queueMetrics{}

// NewDepthMetric implements kworkqueue.MetricsProvider: the depth of a queue
// without priorities (a client-go queue), with an empty priority label, as
// controller-runtime reports a plain queue.
func (q queueMetrics) NewDepthMetric(name string) kworkqueue.GaugeMetric {
	return q.m.depth.WithLabelValues(name, name, "")
}

// NewDepthMetricWithPriority implements workqueue.MetricsProviderWithPriority:
// ctrlkit's queue reports its depth per priority, as controller-runtime's
// priority queue does (priority="0" for keys added without one).
func (q queueMetrics) NewDepthMetricWithPriority(name string) workqueue.DepthMetricWithPriority {
	return &depthByPriority{vec: q.m.depth, name: name, zero: q.m.depth.WithLabelValues(name, name, "0")}
}

// depthByPriority is the depth gauge of one queue, a series per priority.
// Children are cached (a lookup by label values hashes them under the vec's
// lock), the one of priority 0, which most keys have, without a lock.
type depthByPriority struct {
	vec  *prometheus.GaugeVec
	name string
	zero prometheus.Gauge

	mu       sync.Mutex
	children map[int]prometheus.Gauge
}

func (d *depthByPriority) gauge(priority int) prometheus.Gauge {
	if priority == 0 {
		return d.zero
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	g, ok := d.children[priority]
	if !ok {
		if d.children == nil {
			d.children = map[int]prometheus.Gauge{}
		}
		g = d.vec.WithLabelValues(d.name, d.name, strconv.Itoa(priority))
		d.children[priority] = g
	}
	return g
}

func (d *depthByPriority) Inc(priority int) { d.gauge(priority).Inc() }
func (d *depthByPriority) Dec(priority int) { d.gauge(priority).Dec() }

// NewAddsMetric implements kworkqueue.MetricsProvider.
func (q queueMetrics) NewAddsMetric(name string) kworkqueue.CounterMetric {
	return q.m.adds.WithLabelValues(name, name)
}

// NewLatencyMetric implements kworkqueue.MetricsProvider.
func (q queueMetrics) NewLatencyMetric(name string) kworkqueue.HistogramMetric {
	return q.m.latency.WithLabelValues(name, name)
}

// NewWorkDurationMetric implements kworkqueue.MetricsProvider.
func (q queueMetrics) NewWorkDurationMetric(name string) kworkqueue.HistogramMetric {
	return q.m.workDuration.WithLabelValues(name, name)
}

// NewUnfinishedWorkSecondsMetric implements kworkqueue.MetricsProvider.
func (q queueMetrics) NewUnfinishedWorkSecondsMetric(name string) kworkqueue.SettableGaugeMetric {
	return q.m.unfinished.WithLabelValues(name, name)
}

// NewLongestRunningProcessorSecondsMetric implements kworkqueue.MetricsProvider.
func (q queueMetrics) NewLongestRunningProcessorSecondsMetric(name string) kworkqueue.SettableGaugeMetric {
	return q.m.longestRunning.WithLabelValues(name, name)
}

// NewRetriesMetric implements kworkqueue.MetricsProvider.
func (q queueMetrics) NewRetriesMetric(name string) kworkqueue.CounterMetric {
	return q.m.retries.WithLabelValues(name, name)
}

type metricsKey struct{}

// WithMetrics returns a context carrying m, for Controller.Run: a controller
// built without Options.Metrics reports into the Metrics of the context it
// runs with. A manager.Manager runs its controllers with its own.
func WithMetrics(ctx context.Context, m *Metrics) context.Context {
	return context.WithValue(ctx, metricsKey{}, m)
}

// MetricsFrom returns the Metrics WithMetrics put in ctx, or nil.
func MetricsFrom(ctx context.Context) *Metrics {
	m, _ := ctx.Value(metricsKey{}).(*Metrics)
	return m
}
