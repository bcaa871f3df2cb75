package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kworkqueue "k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/predicate"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// A Reconcile that read a namespace no longer watched is no failure: the key
// is forgotten, not retried, not counted as an error, logged at V(2).
func TestNamespaceNotWatchedForgetsTheKey(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	notWatched := &informer.NamespaceNotWatchedError{Informer: "pods", Namespace: "gone"}
	s := newScript(clk, func(int, string) (Result, error) {
		return Result{}, fmt.Errorf("reading pods: %w", notWatched)
	})
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	q := newSpyQueue[string]("not-watched", clk, nil, m)
	c, err := New("not-watched", Reconciler[string](s), Options[string]{Queue: q, Metrics: m})
	require.NoError(t, err)
	ctx, logs := testLogger(t)
	stop := startController(t, ctx, c)
	c.Enqueue("gone/web")
	s.next(t)
	waitIdle(t, c)
	assert.Equal(t, Stats{}, c.Stats(), "nothing retrying")
	clk.Step(time.Hour)
	waitIdle(t, c)
	stop()
	assert.Len(t, s.Calls(), 1, "not retried")
	for _, op := range q.Ops() {
		assert.False(t, strings.HasPrefix(op, "AddRateLimited") || strings.HasPrefix(op, "AddAfter"), "requeued: %v", q.Ops())
	}
	assert.Contains(t, q.Ops(), "Forget(gone/web)")
	assert.Equal(t, 0.0, testutil.ToFloat64(m.reconcileErrors.WithLabelValues("not-watched")))
	assert.Equal(t, 0.0, testutil.ToFloat64(m.reconcileTotal.WithLabelValues("not-watched", resultError)))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.reconcileTotal.WithLabelValues("not-watched", resultSuccess)))
	found := false
	for _, e := range logged(logs) {
		if e.Message == "Reconcile read a namespace no longer watched; forgetting the key" {
			found = true
			assert.Equal(t, 2, e.Verbosity)
		}
		assert.NotEqual(t, "Reconcile failed; retrying with backoff", e.Message)
	}
	assert.True(t, found, "logged: %v", messages(logs))
}

// A delete of an object that only left the scope enqueues nothing, while
// observers and predicates see it, flagged.
func TestWatchOutOfScopeDelete(t *testing.T) {
	c := newTestController(t)
	inf := &capturingInformer[*corev1.ConfigMap]{}
	var mu sync.Mutex
	var observed, judged []informer.DeleteInfo
	observer := informer.HandlerFuncs[*corev1.ConfigMap]{
		OnOutOfScope: func(o *corev1.ConfigMap) {
			mu.Lock()
			defer mu.Unlock()
			observed = append(observed, informer.DeleteInfo{Key: o.Namespace + "/" + o.Name, OutOfScope: true})
		},
		OnDelete: func(o *corev1.ConfigMap) {
			mu.Lock()
			defer mu.Unlock()
			observed = append(observed, informer.DeleteInfo{Key: o.Namespace + "/" + o.Name})
		},
	}
	p := predicate.Funcs[*corev1.ConfigMap]{DeleteFunc: func(e predicate.DeleteEvent[*corev1.ConfigMap]) bool {
		judged = append(judged, e.DeleteInfo)
		return true
	}}
	require.NoError(t, Watch(c, inf, EnqueueObject[*corev1.ConfigMap], WithPredicates[*corev1.ConfigMap](p), WithObserver[*corev1.ConfigMap](observer)))
	h, keys := registered(t, c, inf)

	left := labelled("left", "x", "1", 1)
	h.HandleDelete(left, informer.DeleteInfo{Key: "ns/left", OutOfScope: true})
	assert.Empty(t, keys(), "not deleted: nothing to reconcile")
	gone := labelled("gone", "x", "1", 1)
	h.HandleDelete(gone, informer.DeleteInfo{Key: "ns/gone"})
	assert.Equal(t, []Key{{Namespace: "ns", Name: "gone"}}, keys())
	assert.Equal(t, []informer.DeleteInfo{{Key: "ns/left", OutOfScope: true}, {Key: "ns/gone"}}, judged)
	assert.Equal(t, []informer.DeleteInfo{{Key: "ns/left", OutOfScope: true}, {Key: "ns/gone"}}, observed)
}

// The journey on a fake cluster: a controller over an informer following a
// NamespaceSet reconciles the namespaces added, not those removed (their
// objects are not reconciled as deleted), and a key of a removed namespace
// queued by hand is forgotten.
func TestControllerFollowsNamespaceSet(t *testing.T) {
	cm := func(ns, name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	cluster, err := fakecluster.New(cm("a", "x"), cm("b", "y"))
	require.NoError(t, err)
	f := informer.NewFactory(cluster.Clientset(), informer.Options{})
	t.Cleanup(f.Shutdown)
	set, err := informer.NewNamespaceSet("a")
	require.NoError(t, err)
	cms, err := informer.For(f, informer.InNamespaceSet[*corev1.ConfigMap](set))
	require.NoError(t, err)

	var mu sync.Mutex
	results := map[Key][]string{}
	r := ReconcilerFunc[Key](func(_ context.Context, k Key) (Result, error) {
		_, err := cms.Lister().Get(k.Namespace, k.Name)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			results[k] = append(results[k], "found")
		case apierrors.IsNotFound(err):
			results[k] = append(results[k], "gone")
		default:
			results[k] = append(results[k], "error")
		}
		return Result{}, err
	})
	got := func(k Key) []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), results[k]...)
	}
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	c, err := New("follows", r, Options[Key]{Metrics: m, Queue: kworkqueue.NewTypedRateLimitingQueue(kworkqueue.DefaultTypedControllerRateLimiter[Key]())})
	require.NoError(t, err)
	require.NoError(t, Watch(c, cms, EnqueueObject[*corev1.ConfigMap]))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.Start(ctx)
	startController(t, ctx, c)
	x, y := Key{Namespace: "a", Name: "x"}, Key{Namespace: "b", Name: "y"}
	require.Eventually(t, func() bool { return len(got(x)) == 1 }, 10*time.Second, time.Millisecond)

	require.NoError(t, set.Add("b"))
	require.Eventually(t, func() bool { return len(got(y)) == 1 }, 10*time.Second, time.Millisecond)
	require.Eventually(t, c.HasSynced, 10*time.Second, time.Millisecond)

	set.Remove("a")
	require.Eventually(t, func() bool {
		_, err := cms.Lister().Get("a", "x")
		return err != nil
	}, 10*time.Second, time.Millisecond)
	syncCtx, syncCancel := context.WithTimeout(ctx, 10*time.Second)
	defer syncCancel()
	require.NoError(t, f.WaitForCacheSync(syncCtx))
	waitIdle(t, c)
	assert.Equal(t, []string{"found"}, got(x), "not reconciled as deleted")

	c.Enqueue(x) // queued before its namespace left, say
	require.Eventually(t, func() bool { return len(got(x)) == 2 }, 10*time.Second, time.Millisecond)
	waitIdle(t, c)
	assert.Equal(t, []string{"found", "error"}, got(x))
	assert.Equal(t, Stats{}, c.Stats(), "forgotten, not retried")
	assert.Equal(t, 0.0, testutil.ToFloat64(m.reconcileErrors.WithLabelValues("follows")))
}
