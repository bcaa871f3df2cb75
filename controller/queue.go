package controller

import (
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// newDefaultQueue builds the queue a controller uses when Options.Queue is
// nil, named after the controller so its metrics carry the name.
func newDefaultQueue[K comparable](name string, limiter workqueue.TypedRateLimiter[K], clk clock.WithTicker, m *Metrics) workqueue.TypedRateLimitingInterface[K] {
	cfg := workqueue.TypedRateLimitingQueueConfig[K]{Name: name, Clock: clk}
	if m != nil {
		cfg.MetricsProvider = m
	}
	return workqueue.NewTypedRateLimitingQueueWithConfig(limiter, cfg)
}

// add puts key back: after a delay, through the rate limiter, or at once.
func (c *Controller[K]) add(key K, priority *int, after time.Duration, rateLimited bool) {
	_ = priority
	switch {
	case after > 0:
		c.queue.AddAfter(key, after)
	case rateLimited:
		c.queue.AddRateLimited(key)
	default:
		c.queue.Add(key)
	}
}
