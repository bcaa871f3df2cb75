package sharding_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"

	"github.com/ctrlkit/ctrlkit/testkit"
)

// BenchmarkAPIServerLabelPatch measures what a real kube-apiserver sustains of the sharder's
// one write, a preconditioned JSON merge patch of an object's labels through the metadata
// client, by how many are in flight at once: the figure the default of --shard-write-qps is
// chosen from (docs/performance.md, "Sharding at scale"). The client has no rate limit. Each
// op is one patch; patches/s is b.N over the wall time.
func BenchmarkAPIServerLabelPatch(b *testing.B) {
	env := testkit.NewAPIServer(b)
	ctx, ns := env.Context(), env.Namespace()
	const objects = 2000
	names := make([]string, objects)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range objects {
		names[i] = fmt.Sprintf("cm-%05d", i)
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			_, err := env.Client().CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: names[i]},
				Data:       map[string]string{"k": "v"},
			}, metav1.CreateOptions{})
			if err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	cfg := env.Config()
	cfg.QPS = -1 // no client-side limit: the server's pace is measured
	meta, err := metadata.NewForConfig(cfg)
	require.NoError(b, err)
	for _, inFlight := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprintf("inflight=%d", inFlight), func(b *testing.B) {
			var next atomic.Int64
			b.ResetTimer()
			var wg sync.WaitGroup
			for range inFlight {
				wg.Go(func() {
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						patch := fmt.Sprintf(`{"metadata":{"labels":{"shard.ctrlkit.dev/bench":"m-%d"}}}`, i)
						_, err := meta.Resource(configMaps).Namespace(ns).Patch(context.Background(),
							names[i%objects], types.MergePatchType, []byte(patch), metav1.PatchOptions{})
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "patches/s")
		})
	}
}
