package webhook

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
)

// The metric names. The first three are controller-runtime's, so dashboards built for it
// work; the last is ctrlkit's.
const (
	// MetricRequests counts the requests each webhook answered, by HTTP status code.
	MetricRequests = "controller_runtime_webhook_requests_total"
	// MetricLatency is the time each webhook took to answer, in seconds.
	MetricLatency = "controller_runtime_webhook_latency_seconds"
	// MetricInFlight is the number of requests each webhook is answering now.
	MetricInFlight = "controller_runtime_webhook_requests_in_flight"
	// MetricRejections counts the reviews each webhook answered with a denial or a failed
	// conversion, by the result's status code (400 undecodable, 403 denied, 422 invalid, 500
	// a handler's failure).
	MetricRejections = "ctrlkit_webhook_rejections_total"
)

type metrics struct {
	requests   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	inFlight   *prometheus.GaugeVec
	rejections *prometheus.CounterVec
}

// newMetrics registers the webhook metrics on reg. Metrics of the same names registered
// already (by another Server on the same registry) are shared, not an error.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRequests,
			Help: "Total number of admission and conversion requests by HTTP status code."}, []string{"webhook", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricLatency,
			Help:    "Histogram of the latency of processing admission and conversion requests.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}, []string{"webhook"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricInFlight,
			Help: "Current number of admission and conversion requests being served."}, []string{"webhook"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRejections,
			Help: "Total number of reviews denied or failed, by the status code of the result."}, []string{"webhook", "code"}),
	}
	var err error
	if m.requests, err = register(reg, m.requests); err != nil {
		return nil, err
	}
	if m.latency, err = register(reg, m.latency); err != nil {
		return nil, err
	}
	if m.inFlight, err = register(reg, m.inFlight); err != nil {
		return nil, err
	}
	if m.rejections, err = register(reg, m.rejections); err != nil {
		return nil, err
	}
	return m, nil
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	var dup prometheus.AlreadyRegisteredError
	if errors.As(err, &dup) {
		if existing, ok := dup.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}

// outcome is what a handler tells the instrumentation about its answer beyond the HTTP code.
type outcome struct{ rejectedCode int32 }

type outcomeKey struct{}

// reportRejection records that the review of ctx's request was denied (or its conversion
// failed) with the result code; outside a Server it does nothing.
func reportRejection(ctx context.Context, code int32) {
	if o, ok := ctx.Value(outcomeKey{}).(*outcome); ok {
		if code == 0 {
			code = http.StatusInternalServerError
		}
		o.rejectedCode = code
	}
}

// instrument wraps the handler of one webhook with its metrics.
func (m *metrics) instrument(name string, h http.Handler, clk clock.PassiveClock) http.Handler {
	requests := func(code int) prometheus.Counter { return m.requests.WithLabelValues(name, strconv.Itoa(code)) }
	latency := m.latency.WithLabelValues(name)
	inFlight := m.inFlight.WithLabelValues(name)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := clk.Now()
		inFlight.Inc()
		defer inFlight.Dec()
		o := &outcome{}
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), outcomeKey{}, o)))
		latency.Observe(clk.Since(start).Seconds())
		requests(rec.code).Inc()
		if o.rejectedCode != 0 {
			m.rejections.WithLabelValues(name, strconv.Itoa(int(o.rejectedCode))).Inc()
		}
	})
}

// statusRecorder remembers the status code a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	code        int
	wroteHeader bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wroteHeader {
		s.code, s.wroteHeader = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	s.wroteHeader = true
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (MaxBytesReader closes it on an
// oversized body).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
