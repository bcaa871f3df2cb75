package workqueue

import (
	kworkqueue "k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// Option configures a Queue built by New. Every option is optional; the zero configuration is an
// unnamed queue on the real clock with client-go's default controller rate limiter and no metrics.
type Option func(*options)

type options struct {
	name    string
	clock   clock.WithTicker
	limiter any // a kworkqueue.TypedRateLimiter[T]; New checks T
	metrics kworkqueue.MetricsProvider
}

// WithName names the queue. The name labels the queue's metrics; an unnamed queue reports none,
// as in client-go.
func WithName(name string) Option {
	return func(o *options) { o.name = name }
}

// WithClock sets the clock used for delays and metrics (a k8s.io/utils/clock/testing FakeClock in
// tests). Nil means the real clock.
func WithClock(c clock.WithTicker) Option {
	return func(o *options) { o.clock = c }
}

// WithRateLimiter sets the limiter behind AddRateLimited, Forget, NumRequeues and
// AddOpts.RateLimited. Any client-go TypedRateLimiter works as it is. Nil means the default,
// client-go's DefaultTypedControllerRateLimiter: the larger of a per-item exponential backoff
// (5 ms doubling to 1000 s) and an overall token bucket (10 qps, burst 100).
//
// The limiter's item type must be the queue's: New ignores a limiter for another type and logs
// an error (with klog) instead of failing, keeping the default.
func WithRateLimiter[T comparable](rl kworkqueue.TypedRateLimiter[T]) Option {
	return func(o *options) {
		if rl == nil {
			o.limiter = nil
			return
		}
		o.limiter = rl
	}
}

// WithMetricsProvider reports the queue's metrics (depth, adds, latency, work duration,
// unfinished work seconds, longest running processor seconds, retries) through p, a client-go
// MetricsProvider. Metrics start only when the queue also has a name (WithName). Unlike client-go,
// the provider registered globally with client-go's workqueue.SetProvider is not consulted: it is
// not visible outside client-go, so pass the provider here.
func WithMetricsProvider(p kworkqueue.MetricsProvider) Option {
	return func(o *options) { o.metrics = p }
}
