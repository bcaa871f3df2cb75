package controller

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
)

// BenchmarkLoop measures the worker loop's own cost per key: b.N distinct
// keys are enqueued and reconciled by a Reconciler that does nothing, with
// 1 or 8 workers, with and without Prometheus metrics, with and without
// provenance, with fences on (none recorded), with Freshness on (no lag).
func BenchmarkLoop(b *testing.B) {
	for _, bc := range []struct {
		name       string
		workers    int
		metrics    bool
		provenance bool
		fences     bool
		freshness  bool
	}{
		{"workers=1", 1, false, false, false, false},
		{"workers=8", 8, false, false, false, false},
		{"workers=8/metrics", 8, true, false, false, false},
		{"workers=8/provenance", 8, false, true, false, false},
		{"workers=8/fences", 8, false, false, true, false},
		{"workers=8/freshness", 8, false, false, false, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var done atomic.Int64
			finished := make(chan struct{})
			n := int64(b.N)
			r := ReconcilerFunc[int](func(context.Context, int) (Result, error) {
				if done.Add(1) == n {
					close(finished)
				}
				return Result{}, nil
			})
			opts := Options[int]{Workers: bc.workers}
			if bc.provenance {
				// The Reconciling line is at -v=2, off in the benchmark as in production
				// at the default verbosity: the record is kept and put in the context.
				opts.Provenance = &Provenance{}
			}
			if bc.fences {
				// Fences on, none recorded: the cost every key pays for the check.
				opts.Fences = &Fences{}
			}
			if bc.freshness {
				// The gate and the breaker on, nothing lagging: the cost every key pays for
				// the breaker's step.
				opts.Freshness = Freshness{Gate: true, MaxLag: time.Minute}
			}
			if bc.metrics {
				m, err := NewMetrics(prometheus.NewRegistry())
				if err != nil {
					b.Fatal(err)
				}
				opts.Metrics = m
			}
			c, err := New("bench", Reconciler[int](r), opts)
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
			stopped := make(chan error)
			go func() { stopped <- c.Run(ctx) }()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				c.Enqueue(i)
			}
			<-finished
			b.StopTimer()
			cancel()
			<-stopped
		})
	}
}
