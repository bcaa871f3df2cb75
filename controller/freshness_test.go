package controller

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/provenance"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

var configMapsGVR = corev1.SchemeGroupVersion.WithResource("configmaps")

// seenRecorder records, for each Reconcile, its key, whether the cache held ConfigMap
// "ns/new" then, and its reasons.
type seenRecorder struct {
	lister informer.Lister[*corev1.ConfigMap]
	mu     sync.Mutex
	calls  []seenCall
}

type seenCall struct {
	key     Key
	sawNew  bool
	reasons provenance.Reasons
}

func (r *seenRecorder) Reconcile(ctx context.Context, key Key) (Result, error) {
	_, err := r.lister.Namespace("ns").Get("new")
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, seenCall{key: key, sawNew: err == nil, reasons: ReasonsFrom(ctx)})
	return Result{}, nil
}

func (r *seenRecorder) Calls() []seenCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// laggingController builds a controller watching ConfigMaps through a connection to c whose
// ConfigMaps lag at c's state now (a watch cache behind etcd, a partitioned watch): its
// informer lists the past and hears nothing until catchUp.
func laggingController(t *testing.T, c *fakecluster.Cluster, opts Options[Key]) (*Controller[Key], *seenRecorder, func(...schema.GroupVersionResource)) {
	t.Helper()
	conn := c.Connect()
	catchUp := conn.Lag(c.Snapshot(), configMapsGVR)
	f := informer.NewFactory(conn.Clientset(), informer.Options{})
	t.Cleanup(f.Shutdown)
	cms, err := informer.For[*corev1.ConfigMap](f)
	require.NoError(t, err)
	r := &seenRecorder{lister: cms.Lister()}
	ctl, err := New("fresh", Reconciler[Key](r), opts)
	require.NoError(t, err)
	require.NoError(t, Watch(ctl, cms, EnqueueObject[*corev1.ConfigMap]))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f.Start(ctx)
	return ctl, r, catchUp
}

func newFreshCluster(t *testing.T) *fakecluster.Cluster {
	t.Helper()
	c, err := fakecluster.New(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "old"}})
	require.NoError(t, err)
	return c
}

func createNew(t *testing.T, c *fakecluster.Cluster) {
	t.Helper()
	_, err := c.Clientset().CoreV1().ConfigMaps("ns").Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "new"}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// With Freshness.Gate, a controller started onto a cache that lags starts no worker until the
// cache has caught up: its first Reconcile sees what was written before it started.
func TestFreshnessGateHoldsTheWorkersUntilTheCacheCaughtUp(t *testing.T) {
	c := newFreshCluster(t)
	ctl, r, catchUp := laggingController(t, c, Options[Key]{Freshness: Freshness{Gate: true}})
	createNew(t, c) // after the connection's snapshot: its informer does not see it
	ctx, logs := testLogger(t)
	stop := startController(t, ctx, ctl)
	defer stop()
	require.Eventually(t, func() bool { return ctl.Stats().Lagging != "" }, 10*time.Second, time.Millisecond)
	assert.Contains(t, ctl.Stats().Lagging, "the workers wait for informer configmaps")
	assert.Empty(t, r.Calls(), "no worker runs while the gate waits")

	catchUp()
	require.Eventually(t, func() bool { return len(r.Calls()) >= 2 }, 10*time.Second, time.Millisecond)
	for _, call := range r.Calls() {
		assert.True(t, call.sawNew, "%v reconciled before the cache caught up", call.key)
	}
	assert.Empty(t, ctl.Stats().Lagging)
	assert.Contains(t, messages(logs), "Waiting for a cache to reach the API server's state before starting the workers")
}

// The gate over every source of informer a controller watches: typed, metadata-only and
// unstructured, namespaced and cluster-scoped.
func TestFreshnessGateOverEveryShape(t *testing.T) {
	namespaces := corev1.SchemeGroupVersion.WithResource("namespaces")
	for _, tc := range []struct {
		name     string
		resource schema.GroupVersionResource
		watch    func(t *testing.T, f *informer.Factory, c *Controller[Key])
		write    func(t *testing.T, c *fakecluster.Cluster)
	}{
		{"typed", configMapsGVR, func(t *testing.T, f *informer.Factory, c *Controller[Key]) {
			inf, err := informer.For[*corev1.ConfigMap](f)
			require.NoError(t, err)
			require.NoError(t, Watch(c, inf, EnqueueObject[*corev1.ConfigMap]))
		}, createNew},
		{"metadata", configMapsGVR, func(t *testing.T, f *informer.Factory, c *Controller[Key]) {
			inf, err := informer.ForMetadata(f, configMapsGVR)
			require.NoError(t, err)
			require.NoError(t, Watch(c, inf, EnqueueObject[*metav1.PartialObjectMetadata]))
		}, createNew},
		{"unstructured cluster-scoped", namespaces, func(t *testing.T, f *informer.Factory, c *Controller[Key]) {
			inf, err := informer.ForResource[*unstructured.Unstructured](f, namespaces)
			require.NoError(t, err)
			require.NoError(t, Watch(c, inf, EnqueueObject[*unstructured.Unstructured]))
		}, func(t *testing.T, c *fakecluster.Cluster) {
			_, err := c.Clientset().CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, metav1.CreateOptions{})
			require.NoError(t, err)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFreshCluster(t)
			conn := c.Connect()
			catchUp := conn.Lag(c.Snapshot(), tc.resource)
			f := informer.NewFactory(conn.Clientset(), informer.Options{DynamicClient: conn.Dynamic(), MetadataClient: conn.Metadata()})
			t.Cleanup(f.Shutdown)
			var mu sync.Mutex
			var keys []Key
			ctl, err := New("fresh", ReconcilerFunc[Key](func(_ context.Context, k Key) (Result, error) {
				mu.Lock()
				defer mu.Unlock()
				keys = append(keys, k)
				return Result{}, nil
			}), Options[Key]{Freshness: Freshness{Gate: true}})
			require.NoError(t, err)
			tc.watch(t, f, ctl)
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			f.Start(ctx)
			tc.write(t, c)
			stop := startController(t, context.Background(), ctl)
			defer stop()
			require.Eventually(t, func() bool { return ctl.Stats().Lagging != "" }, 10*time.Second, time.Millisecond)
			mu.Lock()
			assert.Empty(t, keys, "reconciled while the gate waits")
			mu.Unlock()
			catchUp()
			require.Eventually(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return slices.ContainsFunc(keys, func(k Key) bool { return k.Name == "new" })
			}, 10*time.Second, time.Millisecond)
		})
	}
}

// Without the gate, the same controller reconciles from the past: what the gate is for.
func TestWithoutFreshnessGateTheWorkersReadThePast(t *testing.T) {
	c := newFreshCluster(t)
	ctl, r, catchUp := laggingController(t, c, Options[Key]{})
	defer catchUp()
	createNew(t, c)
	stop := startController(t, context.Background(), ctl)
	defer stop()
	require.Eventually(t, func() bool { return len(r.Calls()) >= 1 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, seenCall{key: Key{Namespace: "ns", Name: "old"}}, r.Calls()[0], "reconciled on a cache without ns/new")
}

// A quiet resource's cache is current although other resources moved the cluster's
// resourceVersion past it: the gate confirms it with a consistent list, without a bookmark.
func TestFreshnessGatePassesAQuietCache(t *testing.T) {
	c := newFreshCluster(t)
	ctl, r, _ := laggingController(t, c, Options[Key]{Freshness: Freshness{Gate: true}})
	_, err := c.Clientset().CoreV1().Secrets("ns").Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	stop := startController(t, context.Background(), ctl)
	defer stop()
	require.Eventually(t, func() bool { return len(r.Calls()) == 1 }, 10*time.Second, time.Millisecond)
}

// With Freshness.MaxLag, keys are held while a cache lags beyond the bound, named in Stats and
// the metric, and run once it caught up, with a "stale" trigger in their provenance.
func TestFreshnessMaxLagHoldsKeysWhileACacheLags(t *testing.T) {
	c := newFreshCluster(t)
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	ctl, r, catchUp := laggingController(t, c, Options[Key]{Metrics: m, Provenance: &Provenance{}, Freshness: Freshness{MaxLag: time.Second}})
	createNew(t, c)
	ctx, logs := testLogger(t)
	stop := startController(t, ctx, ctl)
	defer stop()
	require.Eventually(t, func() bool { return len(r.Calls()) == 1 }, 10*time.Second, time.Millisecond, "before the bound, keys run")
	require.Eventually(t, func() bool { return ctl.Stats().Lagging != "" }, 10*time.Second, time.Millisecond)
	assert.Contains(t, ctl.Stats().Lagging, "informer configmaps lags by")
	assert.Contains(t, messages(logs), "Holding keys: a cache lags behind the API server beyond Freshness.MaxLag")
	assert.GreaterOrEqual(t, testutil.ToFloat64(m.cacheLag.WithLabelValues("fresh", "configmaps")), 1.0)

	ctl.Enqueue(Key{Namespace: "ns", Name: "old"})
	require.Eventually(t, func() bool { return ctl.Stats().Stale == 1 }, 10*time.Second, time.Millisecond)
	assert.Len(t, r.Calls(), 1, "held, not reconciled")

	catchUp()
	require.Eventually(t, func() bool { return len(r.Calls()) >= 2 }, 10*time.Second, time.Millisecond)
	waitIdle(t, ctl)
	var resumed *seenCall
	for _, call := range r.Calls()[1:] {
		assert.True(t, call.sawNew, "%v reconciled before the cache caught up", call.key)
		if call.key.Name == "old" {
			resumed = &call
		}
	}
	require.NotNil(t, resumed)
	assert.Equal(t, 1, resumed.reasons.Count(provenance.TriggerStale), "reasons: %v", resumed.reasons)
	assert.GreaterOrEqual(t, resumed.reasons.Count(provenance.TriggerManual), 1, "the held Enqueue is carried: %v", resumed.reasons)
	assert.Equal(t, 0, ctl.Stats().Stale)
	assert.Empty(t, ctl.Stats().Lagging)
	assert.Equal(t, 0.0, testutil.ToFloat64(m.cacheLag.WithLabelValues("fresh", "configmaps")))
	assert.Contains(t, messages(logs), "Resuming: the caches caught up with the API server")
}

// A quiet cache behind the cluster's resourceVersion does not trip the breaker: a consistent
// list confirms it is current.
func TestFreshnessMaxLagIgnoresAQuietCache(t *testing.T) {
	c := newFreshCluster(t)
	ctl, r, _ := laggingController(t, c, Options[Key]{Freshness: Freshness{MaxLag: time.Second}})
	ctx, logs := testLogger(t)
	stop := startController(t, ctx, ctl)
	defer stop()
	require.Eventually(t, func() bool { return len(r.Calls()) == 1 }, 10*time.Second, time.Millisecond)
	for i := range 3 {
		_, err := c.Clientset().CoreV1().Secrets("ns").Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{GenerateName: "s-"}}, metav1.CreateOptions{})
		require.NoError(t, err, i)
	}
	// Past the bound and a confirmation: the breaker has judged a read older than MaxLag.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		require.Empty(t, ctl.Stats().Lagging)
		ctl.Enqueue(Key{Namespace: "ns", Name: "old"})
		waitIdle(t, ctl)
	}
	assert.NotContains(t, messages(logs), "Holding keys: a cache lags behind the API server beyond Freshness.MaxLag")
}

func TestFreshnessOptions(t *testing.T) {
	for _, d := range []time.Duration{-time.Second, time.Millisecond} {
		_, err := New("bad", Reconciler[Key](&seenRecorder{}), Options[Key]{Freshness: Freshness{MaxLag: d}})
		var oe *OptionsError
		require.True(t, errors.As(err, &oe), "%v: %v", d, err)
		assert.Equal(t, "Freshness.MaxLag", oe.Field)
		assert.Equal(t, "bad", oe.Controller)
	}
}
