package controller

import (
	"time"

	kworkqueue "k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/workqueue"
)

// priorityAdder is the optional part of a queue that honours
// Result.Priority. ctrlkit's *workqueue.Queue has it; a client-go queue given
// as Options.Queue does not, and then priorities are ignored.
type priorityAdder[K comparable] interface {
	AddWithOpts(o workqueue.AddOpts, items ...K)
}

// newDefaultQueue builds the queue a controller uses when Options.Queue is
// nil: a ctrlkit queue named after the controller, so its metrics carry the
// name.
func newDefaultQueue[K comparable](name string, limiter kworkqueue.TypedRateLimiter[K], clk clock.WithTicker, m *Metrics, provenance bool) *workqueue.Queue[K] {
	opts := []workqueue.Option[K]{
		workqueue.WithName[K](name),
		workqueue.WithClock[K](clk),
		workqueue.WithRateLimiter(limiter),
	}
	if provenance {
		opts = append(opts, workqueue.WithProvenance[K]())
	}
	if m != nil {
		opts = append(opts, workqueue.WithMetricsProvider[K](m))
	}
	return workqueue.New(opts...)
}

// add puts key back: after a delay, through the rate limiter, or at once;
// with a priority when one was asked for and the queue has priorities, and
// with t as its trigger when the controller has provenance.
func (q *runQueue[K]) add(key K, priority *int, after time.Duration, rateLimited bool, t Trigger) {
	if q.why != nil {
		o := workqueue.AddOpts{After: after, RateLimited: rateLimited, Cause: t.cause()}
		if priority != nil {
			o.Priority = *priority
		}
		q.why.AddWithOpts(o, key)
		return
	}
	if priority != nil && q.prio != nil {
		q.prio.AddWithOpts(workqueue.AddOpts{Priority: *priority, After: after, RateLimited: rateLimited}, key)
		return
	}
	switch {
	case after > 0:
		q.AddAfter(key, after)
	case rateLimited:
		q.AddRateLimited(key)
	default:
		q.Add(key)
	}
}

// addAfter is Add for d <= 0 (what the queue sees is then the same whether
// the key came before or after Run started), else AddAfter.
func (q *runQueue[K]) addAfter(key K, d time.Duration) {
	if d <= 0 {
		q.Add(key)
		return
	}
	q.AddAfter(key, d)
}
