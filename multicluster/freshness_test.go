package multicluster_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/multicluster"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

var configMapsGVR = corev1.SchemeGroupVersion.WithResource("configmaps")

// sight records whether each Reconcile found ConfigMap default/new in its
// cluster's cache.
type sight struct {
	fleet *multicluster.Fleet
	mu    sync.Mutex
	saw   []bool
}

func (s *sight) Reconcile(_ context.Context, k multicluster.Key) (controller.Result, error) {
	saw, err := cached(s.fleet, k.Cluster, "new")
	if err != nil {
		return controller.Result{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saw = append(s.saw, saw)
	return controller.Result{}, nil
}

func (s *sight) calls() []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.saw)
}

// laggingCluster is a cluster whose connection serves ConfigMaps as they were
// before "new" was created (a watch cache behind etcd), until catchUp.
func laggingCluster(t *testing.T) (multicluster.Connection, func()) {
	t.Helper()
	fc, err := fakecluster.New(configMap("default", "old"))
	require.NoError(t, err)
	conn := fc.Connect()
	catchUp := conn.Lag(fc.Snapshot(), configMapsGVR)
	_, err = fc.Clientset().CoreV1().ConfigMaps("default").Create(context.Background(), configMap("default", "new"), metav1.CreateOptions{})
	require.NoError(t, err)
	return multicluster.Connection{Client: conn.Clientset(), Dynamic: conn.Dynamic(), Metadata: conn.Metadata()},
		func() { catchUp() }
}

// With controller.Options.Freshness.Gate, the keys of a cluster engaged onto
// a cache that lags its API server wait until the cache caught up; Err and
// the Fleet's ReadyNote name the informer meanwhile. Without it, they are
// reconciled on the lagging cache (the control).
func TestFreshnessGateHoldsAClustersKeysUntilItsCachesCaughtUp(t *testing.T) {
	for _, gate := range []bool{true, false} {
		t.Run("gate="+map[bool]string{true: "on", false: "off"}[gate], func(t *testing.T) {
			conn, catchUp := laggingCluster(t)
			fleet, err := multicluster.New(multicluster.Options{Provider: multicluster.NewList(map[string]multicluster.Connection{"lagging": conn})})
			require.NoError(t, err)
			s := &sight{fleet: fleet}
			c, err := multicluster.NewController(fleet, "sight", s, controller.Options[multicluster.Key]{Freshness: controller.Freshness{Gate: gate}})
			require.NoError(t, err)
			require.NoError(t, multicluster.Watch(fleet, c, multicluster.For[*corev1.ConfigMap](), controller.EnqueueObject))
			run(t, fleet, c)

			if !gate {
				require.Eventually(t, func() bool { return len(s.calls()) > 0 }, wait, pollEvery)
				assert.Contains(t, s.calls(), false, "without the gate, a Reconcile read the lagging cache")
				catchUp()
				return
			}
			require.Eventually(t, func() bool {
				cl, err := fleet.Get("lagging")
				return err == nil && errContains(cl.Err(), "caches behind the API server: informer configmaps")
			}, wait, pollEvery, "Err names the informer that lags")
			assert.Contains(t, fleet.ReadyNote(), "cluster lagging: caches behind the API server: informer configmaps")
			require.Eventually(t, func() bool { return c.Stats().Idle() }, wait, pollEvery)
			assert.Empty(t, s.calls(), "no key of the cluster is reconciled while its cache lags")

			catchUp()
			require.Eventually(t, func() bool { return len(s.calls()) >= 2 }, wait, pollEvery, "old and new are reconciled once the cache caught up")
			assert.NotContains(t, s.calls(), false, "every Reconcile saw what the API server held when the cluster was engaged")
			cl, err := fleet.Get("lagging")
			require.NoError(t, err)
			assert.NoError(t, cl.Err())
			assert.Empty(t, fleet.ReadyNote())
		})
	}
}

// freshnessShape is one source of informer a multicluster Watch builds, and a write of the
// object "new" behind a lagging connection's back.
type freshnessShape struct {
	name     string
	resource schema.GroupVersionResource
	watch    func(f *multicluster.Fleet, c *controller.Controller[multicluster.Key]) error
	write    func(fc *fakecluster.Cluster) error
}

// freshnessShapes are typed, metadata-only and unstructured, namespaced and cluster-scoped.
func freshnessShapes() []freshnessShape {
	namespaces := corev1.SchemeGroupVersion.WithResource("namespaces")
	return []freshnessShape{
		{"typed", configMapsGVR, func(f *multicluster.Fleet, c *controller.Controller[multicluster.Key]) error {
			return multicluster.Watch(f, c, multicluster.For[*corev1.ConfigMap](), controller.EnqueueObject)
		}, func(fc *fakecluster.Cluster) error {
			_, err := fc.Clientset().CoreV1().ConfigMaps("default").Create(context.Background(), configMap("default", "new"), metav1.CreateOptions{})
			return err
		}},
		{"metadata", configMapsGVR, func(f *multicluster.Fleet, c *controller.Controller[multicluster.Key]) error {
			return multicluster.Watch(f, c, func(cl *multicluster.Cluster) (informer.Informer[*metav1.PartialObjectMetadata], error) {
				return informer.ForMetadata(cl.Factory, configMapsGVR)
			}, controller.EnqueueObject)
		}, func(fc *fakecluster.Cluster) error {
			_, err := fc.Clientset().CoreV1().ConfigMaps("default").Create(context.Background(), configMap("default", "new"), metav1.CreateOptions{})
			return err
		}},
		{"unstructured cluster-scoped", namespaces, func(f *multicluster.Fleet, c *controller.Controller[multicluster.Key]) error {
			return multicluster.Watch(f, c, func(cl *multicluster.Cluster) (informer.Informer[*unstructured.Unstructured], error) {
				return informer.ForResource[*unstructured.Unstructured](cl.Factory, namespaces)
			}, controller.EnqueueObject)
		}, func(fc *fakecluster.Cluster) error {
			_, err := fc.Clientset().CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, metav1.CreateOptions{})
			return err
		}},
	}
}

// runLaggingShape runs a controller with fresh over one cluster, "lagging", whose connection
// serves tc's resource as it was before tc's write until catchUp; it returns the Fleet and the
// keys reconciled.
func runLaggingShape(t *testing.T, tc freshnessShape, fresh controller.Freshness) (*multicluster.Fleet, *keys, func()) {
	t.Helper()
	fc, err := fakecluster.New(configMap("default", "old"))
	require.NoError(t, err)
	conn := fc.Connect()
	catchUp := conn.Lag(fc.Snapshot(), tc.resource)
	require.NoError(t, tc.write(fc))
	fleet, err := multicluster.New(multicluster.Options{Provider: multicluster.NewList(map[string]multicluster.Connection{
		"lagging": {Client: conn.Clientset(), Dynamic: conn.Dynamic(), Metadata: conn.Metadata()}})})
	require.NoError(t, err)
	seen := &keys{}
	c, err := multicluster.NewController(fleet, "shapes", controller.ReconcilerFunc[multicluster.Key](func(_ context.Context, k multicluster.Key) (controller.Result, error) {
		seen.add(k)
		return controller.Result{}, nil
	}), controller.Options[multicluster.Key]{Freshness: fresh})
	require.NoError(t, err)
	require.NoError(t, tc.watch(fleet, c))
	run(t, fleet, c)
	return fleet, seen, func() { catchUp() }
}

// The per-cluster gate over every source of informer a multicluster Watch builds: typed,
// metadata-only and unstructured, namespaced and cluster-scoped. A Reconcile of the object
// created behind the lagging connection's back comes only once the cache caught up.
func TestFreshnessGateInAClusterOverEveryShape(t *testing.T) {
	for _, tc := range freshnessShapes() {
		t.Run(tc.name, func(t *testing.T) {
			fleet, seen, catchUp := runLaggingShape(t, tc, controller.Freshness{Gate: true})
			require.Eventually(t, func() bool {
				cl, err := fleet.Get("lagging")
				return err == nil && errContains(cl.Err(), "caches behind the API server")
			}, wait, pollEvery)
			seen.mu.Lock()
			assert.Empty(t, seen.seen, "reconciled while the cluster's gate waits")
			seen.mu.Unlock()
			catchUp()
			require.Eventually(t, func() bool { return seen.named("new") }, wait, pollEvery)
		})
	}
}

// With controller.Options.Freshness.MaxLag, a cluster whose watch falls behind its API server
// beyond the bound holds the controller's keys of that cluster, named by Err and ReadyNote,
// while another cluster's keys go on; once it caught up the held keys run on the caught-up
// cache.
func TestFreshnessMaxLagHoldsOneClustersKeysWhileItsCacheLags(t *testing.T) {
	lagging, catchUp := laggingCluster(t)
	fc, err := fakecluster.New(configMap("default", "old"))
	require.NoError(t, err)
	steady := fc.Connect()
	fleet, err := multicluster.New(multicluster.Options{Provider: multicluster.NewList(map[string]multicluster.Connection{
		"lagging": lagging,
		"steady":  {Client: steady.Clientset(), Dynamic: steady.Dynamic(), Metadata: steady.Metadata()},
	})})
	require.NoError(t, err)
	seen := &keys{}
	sawNew := &keys{}
	c, err := multicluster.NewController(fleet, "bounded", controller.ReconcilerFunc[multicluster.Key](func(_ context.Context, k multicluster.Key) (controller.Result, error) {
		seen.add(k)
		saw, err := cached(fleet, k.Cluster, "new")
		if err != nil {
			return controller.Result{}, err
		}
		if saw {
			sawNew.add(k)
		}
		return controller.Result{}, nil
	}), controller.Options[multicluster.Key]{Freshness: controller.Freshness{MaxLag: time.Second}})
	require.NoError(t, err)
	require.NoError(t, multicluster.Watch(fleet, c, multicluster.For[*corev1.ConfigMap](), controller.EnqueueObject))
	run(t, fleet, c)

	old := key("lagging", "default", "old")
	require.Eventually(t, func() bool { return seen.count(old) == 1 }, wait, pollEvery, "before the bound, the cluster's keys run")
	require.Eventually(t, func() bool {
		cl, err := fleet.Get("lagging")
		return err == nil && errContains(cl.Err(), "caches lag behind the API server beyond Freshness.MaxLag: informer configmaps lags by")
	}, wait, pollEvery, "Err names the informer that lags")
	assert.Contains(t, fleet.ReadyNote(), "cluster lagging: caches lag behind the API server beyond Freshness.MaxLag")
	steadyCl, err := fleet.Get("steady")
	require.NoError(t, err)
	assert.NoError(t, steadyCl.Err())

	c.Enqueue(old)
	steadyOld := key("steady", "default", "old")
	before := seen.count(steadyOld)
	c.Enqueue(steadyOld)
	require.Eventually(t, func() bool { return seen.count(steadyOld) > before }, wait, pollEvery, "the other cluster's keys go on")
	require.Eventually(t, func() bool { return c.Stats().Idle() }, wait, pollEvery)
	assert.Equal(t, 1, seen.count(old), "held while the cache lags")
	assert.Zero(t, seen.count(key("lagging", "default", "new")), "not seen by the lagging cache")

	catchUp()
	require.Eventually(t, func() bool {
		return sawNew.count(old) >= 1 && sawNew.count(key("lagging", "default", "new")) >= 1
	}, wait, pollEvery, "the held key runs once the cache caught up, on the caught-up cache")
	require.Eventually(t, func() bool {
		cl, err := fleet.Get("lagging")
		return err == nil && cl.Err() == nil
	}, wait, pollEvery)
	assert.Empty(t, fleet.ReadyNote())
}

// The per-cluster breaker over every source of informer a multicluster Watch builds: each shape's
// cache lagging beyond MaxLag is named, and the object written behind its back is reconciled
// once it caught up.
func TestFreshnessMaxLagInAClusterOverEveryShape(t *testing.T) {
	for _, tc := range freshnessShapes() {
		t.Run(tc.name, func(t *testing.T) {
			fleet, seen, catchUp := runLaggingShape(t, tc, controller.Freshness{MaxLag: time.Second})
			require.Eventually(t, func() bool {
				cl, err := fleet.Get("lagging")
				return err == nil && errContains(cl.Err(), "beyond Freshness.MaxLag: informer "+tc.resource.Resource)
			}, wait, pollEvery)
			catchUp()
			require.Eventually(t, func() bool { return seen.named("new") }, wait, pollEvery)
			require.Eventually(t, func() bool {
				cl, err := fleet.Get("lagging")
				return err == nil && cl.Err() == nil
			}, wait, pollEvery)
		})
	}
}
