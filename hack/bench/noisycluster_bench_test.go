package bench

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/multicluster"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// BenchmarkNoisyCluster is BenchmarkNoisyTenant end to end through a
// multicluster controller: noisyKeys keys of one cluster are enqueued, then
// one key of each of quietFlows other clusters; 8 workers spend noisyCost on
// each. quiet-p99-ms is the 99th percentile of a quiet key's wait from its
// Enqueue to its Reconcile. flows=cluster is NewController's default (a flow
// per cluster); flows=none puts every key in one flow (FIFO order). One op
// is one batch.
func BenchmarkNoisyCluster(b *testing.B) {
	conns := map[string]multicluster.Connection{}
	for i := range quietFlows + 1 {
		fc, err := fakecluster.New()
		if err != nil {
			b.Fatal(err)
		}
		conns["c"+strconv.Itoa(i)] = multicluster.Connection{Client: fc.Clientset(), Dynamic: fc.Dynamic(), Metadata: fc.Metadata()}
	}
	for _, mode := range []struct {
		name  string
		flows func(multicluster.Key) string
	}{{"cluster", nil}, {"none", func(multicluster.Key) string { return "" }}} {
		b.Run("flows="+mode.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			fleet, err := multicluster.New(multicluster.Options{Provider: multicluster.NewList(conns)})
			if err != nil {
				b.Fatal(err)
			}
			var (
				mu      sync.Mutex
				added   = map[multicluster.Key]time.Time{}
				waits   []time.Duration
				pending sync.WaitGroup
			)
			r := controller.ReconcilerFunc[multicluster.Key](func(_ context.Context, k multicluster.Key) (controller.Result, error) {
				mu.Lock()
				if at, ok := added[k]; ok {
					waits = append(waits, time.Since(at))
				}
				mu.Unlock()
				time.Sleep(noisyCost)
				pending.Done()
				return controller.Result{}, nil
			})
			c, err := multicluster.NewController(fleet, "noisy", r, controller.Options[multicluster.Key]{Workers: noisyWorker, Flows: mode.flows})
			if err != nil {
				b.Fatal(err)
			}
			var wg sync.WaitGroup
			defer wg.Wait()
			defer cancel()
			wg.Go(func() { _ = fleet.Run(ctx) })
			wg.Go(func() { _ = c.Run(ctx) })
			waitFor(b, "the clusters to sync", func() bool {
				if len(fleet.Clusters()) != len(conns) {
					return false
				}
				for _, name := range fleet.Clusters() {
					if cl, err := fleet.Get(name); err != nil || cl.Err() != nil {
						return false
					}
				}
				return true
			})
			for i := 0; b.Loop(); i++ {
				round := strconv.Itoa(i)
				pending.Add(noisyKeys + quietFlows)
				for j := range noisyKeys {
					c.Enqueue(multicluster.Key{Cluster: "c0", Key: controller.Key{Namespace: "ns", Name: round + "-" + strconv.Itoa(j)}})
				}
				for q := range quietFlows {
					k := multicluster.Key{Cluster: "c" + strconv.Itoa(q+1), Key: controller.Key{Namespace: "ns", Name: round}}
					mu.Lock()
					added[k] = time.Now()
					mu.Unlock()
					c.Enqueue(k)
				}
				pending.Wait()
			}
			slices.Sort(waits)
			p99 := waits[(len(waits)*99+99)/100-1]
			b.ReportMetric(float64(p99)/float64(time.Millisecond), "quiet-p99-ms")
		})
	}
}
