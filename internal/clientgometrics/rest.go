package clientgometrics

import (
	"context"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/leaderelection"
)

// restDurationBuckets are kube's (component-base restclient) and
// controller-runtime's buckets for the REST client duration histograms.
var restDurationBuckets = []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0}

// The REST client and leader election series, with kube's and
// controller-runtime's names, labels and help.
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

	// leaderHooked becomes true when client-go asks this package's provider
	// for a leader metric: the leader-election hook is ours.
	leaderHooked atomic.Bool
)

// LeaderElectionEnded zeroes leader_election_master_status for the lease
// named name ("<namespace>/<name>") once an elector's Run returned:
// client-go sets it to 0 only on a failed renewal, not when its context
// ends.
func LeaderElectionEnded(name string) {
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
