package manager_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/sharding"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// A sharded controller the few-lines way against a real kube-apiserver: the Manager (built
// from a rest.Config, so it builds its metadata client too) checks the ring's access, joins,
// its sharder labels every ConfigMap of the namespace with the member's identity, the
// controller (on ShardFactory's informer) reconciles them, /readyz holds the ring's check, the
// ctrlkit_shard_* series are on the Manager's registry, and the member Lease is released on
// the way out. An informer from the Manager's own Factory, which does not select the member's
// label, stops the Manager with an error naming it.
func TestShardingAPIServer(t *testing.T) {
	// A server of its own, as in TestManagerLeaderElectionAPIServer.
	env := testkit.NewAPIServer(t)
	ctx, ns, client := env.Context(), env.Namespace(), env.Client()
	const n = 6
	for i := range n {
		_, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	options := func(ring, identity string) *manager.ShardingOptions {
		return &manager.ShardingOptions{
			Config: sharding.Config{Ring: ring, Namespace: ns, Identity: identity,
				LeaseDuration: apiLeaseDuration, RenewDeadline: apiRenewDeadline, RetryPeriod: apiRetryPeriod},
			Sharder: sharding.SharderOptions{Resource: configMapsGVR, Namespace: ns},
			Cache:   informer.Options{Namespace: ns},
		}
	}

	reg := prometheus.NewRegistry()
	mgr, err := manager.New(manager.Options{Config: env.Config(), Sharding: options("cms", "m-0"),
		Cache:      informer.Options{Namespace: ns},
		Registerer: reg, HealthProbeAddr: "127.0.0.1:0"})
	require.NoError(t, err)
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
		list, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		mu.Lock()
		defer mu.Unlock()
		for _, cm := range list.Items {
			if cm.Labels[sharding.Label("cms")] != "m-0" || !reconciled[cm.Name] {
				return false
			}
		}
		return len(list.Items) >= n
	}, "every ConfigMap labelled for m-0 and reconciled")
	assert.True(t, mgr.ShardMember().IsMember())

	var code int
	var body string
	waitUntil(t, apiWait, func() bool {
		resp, err := http.Get("http://" + mgr.HealthProbeAddr() + "/readyz")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		code, body = resp.StatusCode, string(b)
		return code == http.StatusOK
	}, "/readyz ok")
	assert.Equal(t, "ok", body)

	families, err := reg.Gather()
	require.NoError(t, err)
	series := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if f.GetName() == "ctrlkit_shard_members" || f.GetName() == "ctrlkit_shard_keys_owned" {
				series[f.GetName()] = m.GetGauge().GetValue()
			}
		}
	}
	assert.Equal(t, 1.0, series["ctrlkit_shard_members"])
	assert.GreaterOrEqual(t, series["ctrlkit_shard_keys_owned"], float64(n))

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(apiWait):
		t.Fatal("Start did not return")
	}
	lease, err := client.CoordinationV1().Leases(ns).Get(ctx, "cms.m-0", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, ptrString(lease.Spec.HolderIdentity), "the member Lease is released on the way out")

	// The mistake a user must not make silently: the owners from Factory, not ShardFactory.
	wrong, err := manager.New(manager.Options{Client: client, Sharding: func() *manager.ShardingOptions {
		o := options("wrong", "m-0")
		meta, err := metadata.NewForConfig(env.Config())
		require.NoError(t, err)
		o.Metadata = meta
		return o
	}(), Cache: informer.Options{Namespace: ns}})
	require.NoError(t, err)
	c2, err := controller.New("configmaps", noop(), controller.Options[controller.Key]{})
	require.NoError(t, err)
	unscoped, err := informer.For[*corev1.ConfigMap](wrong.Factory())
	require.NoError(t, err)
	require.NoError(t, controller.Watch(c2, unscoped, controller.EnqueueObject))
	require.NoError(t, manager.AddSharded(wrong, c2, unscoped))
	err = wrong.Start(ctx)
	assert.ErrorIs(t, err, manager.ErrNotShardScoped)
	assert.ErrorContains(t, err, "without shard.ctrlkit.dev/wrong=m-0; take it from Manager.ShardFactory()")
}

func ptrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
