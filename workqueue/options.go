package workqueue

import (
	kworkqueue "k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// Option configures a Queue[T] built by New. Every option is optional; the zero configuration
// is an unnamed queue on the real clock with client-go's default controller rate limiter and
// no metrics.
//
// Options carry the queue's item type, so that a rate limiter for another item type is a
// compile error rather than a surprise at run time. Go cannot infer T from an option's
// arguments alone except for WithRateLimiter, so the others name it; New then infers T from
// its options:
//
//	q := workqueue.New(workqueue.WithName[string]("pods"), workqueue.WithRateLimiter(limiter))
type Option[T comparable] func(*options[T])

type options[T comparable] struct {
	name    string
	clock   clock.WithTicker
	limiter kworkqueue.TypedRateLimiter[T]
	metrics kworkqueue.MetricsProvider
	// provenance keeps a Record per item (WithProvenance).
	provenance bool
}

// WithName names the queue. The name labels the queue's metrics; an unnamed queue reports none,
// as in client-go.
func WithName[T comparable](name string) Option[T] {
	return func(o *options[T]) { o.name = name }
}

// WithClock sets the clock used for delays and metrics (a k8s.io/utils/clock/testing FakeClock in
// tests). Nil means the real clock.
func WithClock[T comparable](c clock.WithTicker) Option[T] {
	return func(o *options[T]) { o.clock = c }
}

// WithRateLimiter sets the limiter behind AddRateLimited, Forget, NumRequeues and
// AddOpts.RateLimited. Any client-go TypedRateLimiter for the queue's item type works as it is;
// its type is checked at compile time. Nil means the default, client-go's
// DefaultTypedControllerRateLimiter: the larger of a per-item exponential backoff (5 ms doubling
// to 1000 s) and an overall token bucket (10 qps, burst 100).
func WithRateLimiter[T comparable](rl kworkqueue.TypedRateLimiter[T]) Option[T] {
	return func(o *options[T]) { o.limiter = rl }
}

// WithMetricsProvider reports the queue's metrics (depth, adds, latency, work duration,
// unfinished work seconds, longest running processor seconds, retries) through p, a client-go
// MetricsProvider. Metrics start only when the queue also has a name (WithName). Unlike client-go,
// the provider registered globally with client-go's workqueue.SetProvider is not consulted: it is
// not visible outside client-go, so pass the provider here. A provider that also implements
// MetricsProviderWithPriority reports the depth per priority instead of through its depth gauge.
func WithMetricsProvider[T comparable](p kworkqueue.MetricsProvider) Option[T] {
	return func(o *options[T]) { o.metrics = p }
}
