package manager

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// client-go reports REST requests, leader-election transitions and informer
// queues and stores through process-global hooks (tools/metrics.Register,
// leaderelection.SetProvider, cache.SetInformerMetricsProvider)
// that take effect once per process, while every Manager has a registry of
// its own. The design: one set of collectors per process, hooked into
// client-go once, at this package's init — before any goroutine can issue a
// request, so client-go's unsynchronised hook variables are written before
// they are read, as controller-runtime does — and registered into each
// Manager's registry by New. A collector may sit in many registries; each
// Manager's /metrics thus serves the process's counts, like the go_* and
// process_* series.
//
// If another package took client-go's hooks first (component-base's
// metrics/prometheus/restclient and clientgo/fifo or controller-runtime's
// pkg/metrics, all also at init), client-go keeps theirs: these collectors
// then stay without series instead of showing misleading zeros.

// restDurationBuckets are kube's (component-base restclient) and
// controller-runtime's buckets for the REST client duration histograms.
var restDurationBuckets = []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0}

// The series, with kube's and controller-runtime's names, labels and help.
var (
	restRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rest_client_requests_total",
		Help: "Number of HTTP requests, partitioned by status code, method, and host.",
	}, []string{"code", "method", "host"})
	restRequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_request_duration_seconds",
		Help:    "Request latency in seconds. Broken down by verb, and host.",
		Buckets: restDurationBuckets,
	}, []string{"verb", "host"})
	restRateLimiterDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_rate_limiter_duration_seconds",
		Help:    "Client side rate limiter latency in seconds. Broken down by verb, and host.",
		Buckets: restDurationBuckets,
	}, []string{"verb", "host"})
	restRequestRetries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rest_client_request_retries_total",
		Help: "Number of request retries, partitioned by status code, verb, and host.",
	}, []string{"code", "verb", "host"})
	leaderStatus = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "leader_election_master_status",
		Help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
	}, []string{"name"})
	leaderSlowpath = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "leader_election_slowpath_total",
		Help: "Total number of slow path exercised in renewing leader leases. 'name' is the string used to identify the lease. Please make sure to group by name.",
	}, []string{"name"})

	// clientGoCollectors is what New registers into each Manager's registry.
	clientGoCollectors = []prometheus.Collector{
		restRequests, restRequestDuration, restRateLimiterDuration, restRequestRetries,
		leaderStatus, leaderSlowpath, informerSeries,
	}

	// leaderHooked becomes true when client-go asks this package's provider
	// for a leader metric: the leader-election hook is ours.
	leaderHooked atomic.Bool
)

func init() {
	clientmetrics.Register(clientmetrics.RegisterOpts{
		RequestResult:      restResultHook{},
		RequestLatency:     latencyHook{restRequestDuration},
		RateLimiterLatency: latencyHook{restRateLimiterDuration},
		RequestRetry:       restRetryHook{},
	})
	leaderelection.SetProvider(leaderMetricsProvider{})
	cache.SetInformerMetricsProvider(informerSeries) // informer_metrics.go
}

// registerClientGoMetrics registers the client-go series into reg. A
// registry that has them already (two Managers sharing one, or a caller's
// equal collectors) keeps what it has.
func registerClientGoMetrics(reg prometheus.Registerer) error {
	for _, c := range clientGoCollectors {
		if err := reg.Register(c); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
			return fmt.Errorf("manager: client-go metrics: %w", err)
		}
	}
	return nil
}

// leaderElectionEnded zeroes leader_election_master_status for the lease
// named name once an elector's Run returned: client-go sets it to 0 only on
// a failed renewal, not when its context ends.
func leaderElectionEnded(name string) {
	if leaderHooked.Load() {
		leaderStatus.WithLabelValues(name).Set(0)
	}
}

type restResultHook struct{}

func (restResultHook) Increment(_ context.Context, code, method, host string) {
	restRequests.WithLabelValues(code, method, host).Inc()
}

type restRetryHook struct{}

func (restRetryHook) IncrementRetry(_ context.Context, code, verb, host string) {
	restRequestRetries.WithLabelValues(code, verb, host).Inc()
}

// latencyHook observes a duration by verb and the URL's host, as kube does
// (the path would make the series unbounded).
type latencyHook struct{ h *prometheus.HistogramVec }

func (l latencyHook) Observe(_ context.Context, verb string, u url.URL, d time.Duration) {
	l.h.WithLabelValues(verb, u.Host).Observe(d.Seconds())
}

type leaderMetricsProvider struct{}

func (leaderMetricsProvider) NewLeaderMetric() leaderelection.LeaderMetric {
	leaderHooked.Store(true)
	return leaderMetric{}
}

// leaderMetric receives client-go's transitions; name is the lease's
// "<namespace>/<name>" (leaderelection.Config's Namespace and Name).
type leaderMetric struct{}

func (leaderMetric) On(name string)                { leaderStatus.WithLabelValues(name).Set(1) }
func (leaderMetric) Off(name string)               { leaderStatus.WithLabelValues(name).Set(0) }
func (leaderMetric) SlowpathExercised(name string) { leaderSlowpath.WithLabelValues(name).Inc() }

// leaseName is the elector's lease as client-go names it in
// leader_election_master_status: "<namespace>/<name>".
func (m *Manager) leaseName() string {
	cfg := m.elector.Config()
	return cfg.Namespace + "/" + cfg.Name
}
