package workqueue

import (
	"time"

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
	flowOf     func(T) string
	weightOf   func(string) int
	aging      time.Duration
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

// WithFlows serves ready items by flow inside each priority: flowOf names an item's flow
// (typically its namespace, or a tenant), and the flows with ready items take turns, one item
// each (see WithFlowWeights), so that one flow's burst does not delay the others' items behind
// it. Order stays FIFO within a flow, and priorities stay exact: a higher priority is always
// served first. flowOf must be a pure function of the item, cheap (it runs on every enqueue,
// under the queue's lock) and must not call the queue. Nil (the default) keeps one FIFO per
// priority.
func WithFlows[T comparable](flowOf func(item T) string) Option[T] {
	return func(o *options[T]) { o.flowOf = flowOf }
}

// WithFlowWeights gives each flow of WithFlows a weight: at its turn a flow hands out up to that
// many items (weights below 1 count as 1). It is asked at each turn, so a weight can change
// while the flow has items. Nil means every flow weighs 1.
func WithFlowWeights[T comparable](weight func(flow string) int) Option[T] {
	return func(o *options[T]) { o.weightOf = weight }
}

// WithAging bounds how long a ready item waits below the highest priority that has ready items:
// after between bound and 5/4 of bound it moves to the back of that priority (its FIFO, or its
// flow's turn there), so a steady stream of higher-priority items never starves it. The depth
// metric per priority follows the move. Zero or less (the default) means no aging: priorities
// are strict.
func WithAging[T comparable](bound time.Duration) Option[T] {
	return func(o *options[T]) { o.aging = bound }
}
