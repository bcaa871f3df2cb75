package controller

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// Reconcile results, the values of the "result" label of
// ctrlkit_controller_reconcile_total.
const (
	ResultSuccess      = "success"
	ResultError        = "error"
	ResultRequeue      = "requeue"
	ResultRequeueAfter = "requeue_after"
	ResultTerminal     = "terminal"
)

var allResults = []string{ResultSuccess, ResultError, ResultRequeue, ResultRequeueAfter, ResultTerminal}

// Metrics holds the Prometheus collectors of every controller and queue that
// report into one registry. Build one per registry with NewMetrics; a
// manager.Manager builds its own and runs each controller built without one
// with it (WithMetrics).
//
// Controller series (label "controller"):
//
//	ctrlkit_controller_reconcile_total{result}        counter, result is success|error|requeue|requeue_after|terminal
//	ctrlkit_controller_reconcile_duration_seconds     histogram
//	ctrlkit_controller_active_workers                 gauge, workers inside Reconcile now
//	ctrlkit_controller_workers                        gauge, workers configured
//	ctrlkit_controller_panics_total                   counter
//
// Queue series (label "name", the controller's name), the same seven
// client-go's workqueue.MetricsProvider asks for and kube-controller-manager
// exports: workqueue_depth, workqueue_adds_total,
// workqueue_queue_duration_seconds, workqueue_work_duration_seconds,
// workqueue_unfinished_work_seconds,
// workqueue_longest_running_processor_seconds, workqueue_retries_total.
//
// Metrics implements workqueue.MetricsProvider, so it can be given to any
// client-go or ctrlkit queue.
type Metrics struct {
	reconcileTotal    *prometheus.CounterVec
	reconcileDuration *prometheus.HistogramVec
	activeWorkers     *prometheus.GaugeVec
	workers           *prometheus.GaugeVec
	panics            *prometheus.CounterVec

	depth          *prometheus.GaugeVec
	adds           *prometheus.CounterVec
	latency        *prometheus.HistogramVec
	workDuration   *prometheus.HistogramVec
	unfinished     *prometheus.GaugeVec
	longestRunning *prometheus.GaugeVec
	retries        *prometheus.CounterVec
}

var _ workqueue.MetricsProvider = (*Metrics)(nil)

// NewMetrics creates the collectors and registers them with reg. reg must
// not be nil: ctrlkit never falls back to Prometheus' global registry. It
// fails when the collectors are already registered with reg (use the Metrics
// value you built for it the first time).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, &OptionsError{Field: "Registerer", Reason: "nil; pass a prometheus.Registerer (for example prometheus.NewRegistry())"}
	}
	const ns = "ctrlkit"
	ctl := []string{"controller"}
	q := []string{"name"}
	m := &Metrics{
		reconcileTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: "controller", Name: "reconcile_total",
			Help: "Reconciles per controller by result (success, error, requeue, requeue_after, terminal).",
		}, []string{"controller", "result"}),
		reconcileDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Subsystem: "controller", Name: "reconcile_duration_seconds",
			Help:    "Time spent in Reconcile per controller.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}, ctl),
		activeWorkers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Subsystem: "controller", Name: "active_workers",
			Help: "Workers currently inside Reconcile per controller.",
		}, ctl),
		workers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Subsystem: "controller", Name: "workers",
			Help: "Workers configured per controller.",
		}, ctl),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: "controller", Name: "panics_total",
			Help: "Panics recovered in Reconcile per controller.",
		}, ctl),
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "workqueue", Name: "depth",
			Help: "Current depth of the workqueue.",
		}, q),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "workqueue", Name: "adds_total",
			Help: "Adds handled by the workqueue.",
		}, q),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "workqueue", Name: "queue_duration_seconds",
			Help:    "Seconds an item stays in the workqueue before it is handed out.",
			Buckets: prometheus.ExponentialBuckets(1e-8, 10, 11),
		}, q),
		workDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "workqueue", Name: "work_duration_seconds",
			Help:    "Seconds processing an item from the workqueue takes.",
			Buckets: prometheus.ExponentialBuckets(1e-8, 10, 11),
		}, q),
		unfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "workqueue", Name: "unfinished_work_seconds",
			Help: "Seconds of work in progress not yet observed by work_duration; large values mean stuck workers.",
		}, q),
		longestRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "workqueue", Name: "longest_running_processor_seconds",
			Help: "Seconds the longest running processor of the workqueue has been running.",
		}, q),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "workqueue", Name: "retries_total",
			Help: "Retries (rate-limited adds) handled by the workqueue.",
		}, q),
	}
	for _, c := range []prometheus.Collector{
		m.reconcileTotal, m.reconcileDuration, m.activeWorkers, m.workers, m.panics,
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
	results  map[string]prometheus.Counter
	duration prometheus.Observer
	active   prometheus.Gauge
	panics   prometheus.Counter
}

func (m *Metrics) forController(name string, workers int) *controllerMetrics {
	if m == nil {
		return nil
	}
	cm := &controllerMetrics{
		results:  make(map[string]prometheus.Counter, len(allResults)),
		duration: m.reconcileDuration.WithLabelValues(name),
		active:   m.activeWorkers.WithLabelValues(name),
		panics:   m.panics.WithLabelValues(name),
	}
	// Creating every result child now makes the series visible (at 0) from
	// the first scrape, so rate() and alerts work before the first error.
	for _, r := range allResults {
		cm.results[r] = m.reconcileTotal.WithLabelValues(name, r)
	}
	m.workers.WithLabelValues(name).Set(float64(workers))
	return cm
}

func (cm *controllerMetrics) result(r string) {
	if cm != nil {
		cm.results[r].Inc()
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

// NewDepthMetric implements workqueue.MetricsProvider.
func (m *Metrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return m.depth.WithLabelValues(name)
}

// NewAddsMetric implements workqueue.MetricsProvider.
func (m *Metrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return m.adds.WithLabelValues(name)
}

// NewLatencyMetric implements workqueue.MetricsProvider.
func (m *Metrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return m.latency.WithLabelValues(name)
}

// NewWorkDurationMetric implements workqueue.MetricsProvider.
func (m *Metrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return m.workDuration.WithLabelValues(name)
}

// NewUnfinishedWorkSecondsMetric implements workqueue.MetricsProvider.
func (m *Metrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.unfinished.WithLabelValues(name)
}

// NewLongestRunningProcessorSecondsMetric implements workqueue.MetricsProvider.
func (m *Metrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.longestRunning.WithLabelValues(name)
}

// NewRetriesMetric implements workqueue.MetricsProvider.
func (m *Metrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return m.retries.WithLabelValues(name)
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
