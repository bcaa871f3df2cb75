package multicluster_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/multicluster"
	"github.com/ctrlkit/ctrlkit/sharding"
)

// An unreachable cluster beside a reachable one: the reachable one is
// reconciled, the process stays ready, and /readyz?verbose and the metric
// name the unreachable one.
func TestAnUnreachableClusterHoldsNoOtherBack(t *testing.T) {
	up, _ := fake(t, configMap("default", "a"))
	// A server that refuses every request as an API server that is down
	// behind its load balancer would.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "service unavailable", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	list := multicluster.NewList(map[string]multicluster.Connection{
		"up":   up,
		"down": {Config: &rest.Config{Host: down.URL}},
	})
	reg := prometheus.NewPedanticRegistry()
	fleet, c, _ := annotating(t, multicluster.Options{Provider: list, Registerer: reg, ProbeInterval: 50 * time.Millisecond})

	mgr, err := manager.New(manager.Options{Client: up.Client, HealthProbeAddr: "127.0.0.1:0"})
	require.NoError(t, err)
	require.NoError(t, mgr.Add(fleet))
	require.NoError(t, mgr.Add(c))
	run(t, startable{mgr})

	require.Eventually(t, annotated(t, fleet, "up", "default", "a"), wait, pollEvery)
	require.Eventually(t, func() bool {
		cl, err := fleet.Get("down")
		return err == nil && errContains(cl.Err(), "unreachable")
	}, wait, pollEvery)
	readyz := readyzOf(mgr)
	require.Eventually(t, func() bool { code, _ := readyz(); return code == http.StatusOK }, wait, pollEvery)
	_, body := readyz()
	assert.Contains(t, body, "[+]synced ok, but: multicluster-fleet: cluster down: unreachable")
	assert.NotContains(t, body, "cluster up")

	want := `
# HELP ctrlkit_multicluster_cluster_ready 1 when the engaged cluster answers its probe and its caches synced, else 0 (its reason is on /readyz?verbose).
# TYPE ctrlkit_multicluster_cluster_ready gauge
ctrlkit_multicluster_cluster_ready{cluster="down"} 0
ctrlkit_multicluster_cluster_ready{cluster="up"} 1
# HELP ctrlkit_multicluster_clusters Clusters engaged by the Fleet.
# TYPE ctrlkit_multicluster_clusters gauge
ctrlkit_multicluster_clusters 2
`
	require.Eventually(t, func() bool {
		return testutil.GatherAndCompare(reg, strings.NewReader(want), "ctrlkit_multicluster_cluster_ready", "ctrlkit_multicluster_clusters") == nil
	}, wait, pollEvery)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	bytes := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() == "ctrlkit_multicluster_cache_bytes" {
			for _, m := range mf.GetMetric() {
				bytes[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	assert.Greater(t, bytes["up"], bytes["down"], "the reachable cluster's cache holds its ConfigMap, the unreachable one's nothing")

	// /debug/informers shows each cluster's informers after the Manager's.
	rec := httptest.NewRecorder()
	mgr.DebugInformersHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, manager.DebugInformersPath, nil))
	assert.Contains(t, rec.Body.String(), "== Cluster down")
	assert.Regexp(t, `== Cluster up\n\nInformer caches: 1 informers.*\n\nRESOURCE.*\nconfigmaps\s+cluster\s+1\s`, rec.Body.String())
	rec = httptest.NewRecorder()
	mgr.DebugInformersHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, manager.DebugInformersPath+"?format=json", nil))
	var page struct {
		Clusters map[string]struct {
			Memory struct{ Informers []struct{ Resource string } }
		}
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &page))
	require.Contains(t, page.Clusters, "up")
	assert.Equal(t, "configmaps", page.Clusters["up"].Memory.Informers[0].Resource)
}

func TestBadInputIsAnError(t *testing.T) {
	_, err := multicluster.New(multicluster.Options{})
	assert.ErrorIs(t, err, multicluster.ErrInvalidOptions)
	_, err = multicluster.New(multicluster.Options{Provider: multicluster.NewList(nil), ProbeInterval: -time.Second})
	assert.ErrorIs(t, err, multicluster.ErrInvalidOptions)

	for name, conn := range map[string]multicluster.Connection{
		"":    {Config: &rest.Config{Host: "https://x"}},
		"a/b": {Config: &rest.Config{Host: "https://x"}},
		"ok":  {},
	} {
		fleet, err := multicluster.New(multicluster.Options{Provider: multicluster.NewList(map[string]multicluster.Connection{name: conn})})
		require.NoError(t, err)
		err = fleet.Run(context.Background())
		assert.ErrorIs(t, err, multicluster.ErrInvalidOptions, "cluster %q", name)
	}

	_, err = multicluster.New(multicluster.Options{Provider: multicluster.NewList(nil), Sharding: &multicluster.Sharding{}})
	assert.ErrorIs(t, err, multicluster.ErrInvalidOptions, "Sharding without a client")
	hub, _ := fake(t)
	_, err = multicluster.New(multicluster.Options{Provider: multicluster.NewList(nil), Sharding: &multicluster.Sharding{Client: hub.Client}})
	assert.ErrorIs(t, err, sharding.ErrInvalidConfig, "Sharding without a ring")

	sharded, err := multicluster.New(multicluster.Options{
		Provider: multicluster.NewList(map[string]multicluster.Connection{"a/b": hub}),
		Sharding: &multicluster.Sharding{Client: hub.Client, Config: sharding.Config{Ring: "r", Identity: "m", Namespace: "default"}}})
	require.NoError(t, err)
	assert.ErrorIs(t, sharded.Run(context.Background()), multicluster.ErrInvalidOptions, "a sharded Fleet's Provider failing ends Run")

	fleet, err := multicluster.New(multicluster.Options{Provider: multicluster.NewList(nil)})
	require.NoError(t, err)
	up, _ := fake(t)
	assert.ErrorIs(t, fleet.Engage(context.Background(), "early", up), multicluster.ErrInvalidOptions, "not running yet")
	_, err = multicluster.NewController(nil, "x", nil, controller.Options[multicluster.Key]{})
	assert.ErrorIs(t, err, multicluster.ErrInvalidOptions)
	assert.ErrorIs(t, multicluster.Watch[*corev1.ConfigMap](fleet, nil, nil, nil), multicluster.ErrInvalidOptions)
	_, err = multicluster.KubeconfigFiles(map[string]string{"gone": "/nonexistent/kubeconfig"})
	assert.ErrorContains(t, err, `cluster "gone"`)
}

// A cluster engaged again under its name (a rotated credential) replaces
// the old connection: the new cluster is reconciled, the old one no more.
func TestEngagingANameAgainReplacesTheCluster(t *testing.T) {
	old, oldFake := fake(t, configMap("default", "x"))
	list := multicluster.NewList(map[string]multicluster.Connection{"c": old})
	fleet, c, seen := annotating(t, multicluster.Options{Provider: list})
	run(t, fleet, c)
	require.Eventually(t, annotated(t, fleet, "c", "default", "x"), wait, pollEvery)
	first, err := fleet.Get("c")
	require.NoError(t, err)

	replacement, _ := fake(t, configMap("default", "y"))
	require.NoError(t, list.Add("c", replacement))
	require.Eventually(t, annotated(t, fleet, "c", "default", "y"), wait, pollEvery)
	assert.Error(t, first.Context().Err(), "the old cluster was disengaged")
	_, err = oldFake.Clientset().CoreV1().ConfigMaps("default").Create(context.Background(), configMap("default", "z"), metav1Create)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return c.Stats().Idle() && c.Stats().Idle() }, wait, pollEvery)
	assert.Zero(t, seen.count(key("c", "default", "z")))
}
