package manager_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/sharding"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// A ring configured server-side runs server-side on an API server with the
// ShardedListAndWatch gate (no object written, the slots in the Lease, the
// mode in ShardMode and ctrlkit_shard_mode) and on labels on one without it,
// saying so: the same Manager code either way.
func TestShardingServerSideAPIServer(t *testing.T) {
	gated := testkit.NewAPIServerWithOptions(t, testkit.APIServerOptions{FeatureGates: map[string]bool{"ShardedListAndWatch": true}})
	t.Run("served", func(t *testing.T) { runServerSideManager(t, gated, sharding.ModeServer) })
	t.Run("not served", func(t *testing.T) { runServerSideManager(t, testkit.NewAPIServer(t), sharding.ModeLabels) })
}

func runServerSideManager(t *testing.T, env *testkit.Env, want sharding.Mode) {
	ctx, ns, client := env.Context(), env.Namespace(), env.Client()
	const n = 20
	for i := range n {
		_, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	reg := prometheus.NewRegistry()
	mgr, err := manager.New(manager.Options{Config: env.Config(), Registerer: reg,
		Cache: informer.Options{Namespace: ns},
		Sharding: &manager.ShardingOptions{
			Config: sharding.Config{Ring: "cms", Namespace: ns, Identity: "m-0", Mode: sharding.ModeServer,
				LeaseDuration: apiLeaseDuration, RenewDeadline: apiRenewDeadline, RetryPeriod: apiRetryPeriod},
			Sharder: sharding.SharderOptions{Resource: configMapsGVR, Namespace: ns},
			Cache:   informer.Options{Namespace: ns},
		}})
	require.NoError(t, err)
	assert.Equal(t, sharding.ModeServer, mgr.ShardMode(), "as configured, until Start asks the server")
	var (
		mu         sync.Mutex
		reconciled = map[string]bool{}
	)
	c, err := controller.New("configmaps", controller.ReconcilerFunc[controller.Key](func(_ context.Context, k controller.Key) (controller.Result, error) {
		mu.Lock()
		reconciled[k.Name] = true
		mu.Unlock()
		return controller.Result{}, nil
	}), controller.Options[controller.Key]{})
	require.NoError(t, err)
	cms, err := informer.For[*corev1.ConfigMap](mgr.ShardFactory())
	require.NoError(t, err)
	require.NoError(t, controller.Watch(c, cms, controller.EnqueueObject))
	require.NoError(t, manager.AddSharded(mgr, c, cms))

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- mgr.Start(runCtx) }()
	waitUntil(t, apiWait, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(reconciled) == n
	}, "every ConfigMap reconciled")
	assert.Equal(t, want, mgr.ShardMode())

	list, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, cm := range list.Items {
		if want == sharding.ModeServer {
			assert.Empty(t, cm.Labels, "server-side: no label on %s", cm.Name)
		} else {
			assert.Equal(t, "m-0", cm.Labels[sharding.Label("cms")], "fallen back to labels: %s", cm.Name)
		}
	}
	lease, err := client.CoordinationV1().Leases(ns).Get(ctx, "cms.m-0", metav1.GetOptions{})
	require.NoError(t, err)
	if want == sharding.ModeServer {
		assert.Regexp(t, `^m-0_[0-9a-f]+:0-63$`, lease.Annotations[sharding.SlotsAnnotation("cms")])
		assert.Equal(t, lease.Annotations[sharding.SlotsAnnotation("cms")], lease.Annotations[sharding.ServingAnnotation("cms")])
	} else {
		assert.NotContains(t, lease.Annotations, sharding.SlotsAnnotation("cms"))
	}

	families, err := reg.Gather()
	require.NoError(t, err)
	modes := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "ctrlkit_shard_mode" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "mode" {
					modes[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	assert.Equal(t, 1.0, modes[string(want)], "ctrlkit_shard_mode %v", modes)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(apiWait):
		t.Fatal("Start did not return")
	}
}
