package testkit_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kworkqueue "k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// On a real API server under load (20 Deployments, each driven through 15 status writes by 4
// workers that requeue at once), a controller that increments a status counter on every
// Reconcile, reading the object from its informer and writing it back with that
// resourceVersion, never gets a Conflict from its own previous write: Fences.Auto holds each
// key until the informer shows the write.
func TestAPIServerFencedStatusCounterNeverConflicts(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ns := env.Namespace()
	const objects, target = 20, 15
	for i := range objects {
		labels := map[string]string{"app": fmt.Sprint("d-", i)}
		_, err := env.Client().AppsV1().Deployments(ns).Create(env.Context(), &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("d-", i)},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](0),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
				},
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	deps, err := informer.For[*appsv1.Deployment](env.Factory())
	require.NoError(t, err)
	depClient, err := client.For[*appsv1.Deployment](env.Client())
	require.NoError(t, err)

	var tally writeTally
	c, err := controller.New("status-counter", controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
		if key.Namespace != ns {
			// The Env's informers see the whole shared server: other tests' Deployments
			// (the differential harness leaves hundreds) are not this test's to count.
			return controller.Result{}, nil
		}
		d, err := deps.Lister().Get(key.Namespace, key.Name)
		if apierrors.IsNotFound(err) {
			return controller.Result{}, nil
		}
		if err != nil {
			return controller.Result{}, err
		}
		n := ptr.Deref(d.Status.CollisionCount, 0)
		if n >= target {
			return controller.Result{}, nil
		}
		d = d.DeepCopy()
		d.Status.CollisionCount = ptr.To(n + 1)
		_, err = depClient.UpdateStatus(ctx, d, metav1.UpdateOptions{})
		return tally.result(err)
	}), controller.Options[controller.Key]{
		Workers:     4,
		Fences:      &controller.Fences{Auto: true},
		RateLimiter: kworkqueue.NewTypedItemExponentialFailureRateLimiter[controller.Key](0, time.Millisecond),
	})
	require.NoError(t, err)
	require.NoError(t, controller.Watch(c, deps, controller.EnqueueObject))
	env.RunController(env.Context(), c)

	require.Eventually(t, func() bool {
		list, err := env.Client().AppsV1().Deployments(ns).List(env.Context(), metav1.ListOptions{})
		if err != nil || len(list.Items) != objects {
			return false
		}
		for _, d := range list.Items {
			if ptr.Deref(d.Status.CollisionCount, 0) != target {
				return false
			}
		}
		return true
	}, 2*time.Minute, 10*time.Millisecond, "every counter reaches %d", target)
	env.WaitForQuiet(time.Minute)
	assert.Zero(t, tally.conflicts.Load(), "no status write conflicted with the controller's own")
	assert.Equal(t, int32(objects*target), tally.writes.Load(), "one write per increment")
}

// Fences hold across a kube-apiserver restart: while the server is down the controller's
// writes fail and its watch breaks; once it is back the informer re-watches or re-lists, which
// releases every fence (none waits for its TTL), and the counters still never conflict with
// the controller's own writes.
func testFencesAcrossRestart(t *testing.T, env *testkit.Env) {
	ns := env.Namespace()
	const objects, target = 5, 40
	for i := range objects {
		_, err := env.Client().CoreV1().ConfigMaps(ns).Create(env.Context(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("fenced-", i), Labels: map[string]string{"set": "fenced"}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	cms, err := informer.For[*corev1.ConfigMap](env.Factory())
	require.NoError(t, err)
	cmClient, err := client.For[*corev1.ConfigMap](env.Client())
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	metrics, err := controller.NewMetrics(reg)
	require.NoError(t, err)

	count := func(cm *corev1.ConfigMap) int {
		n, _ := strconv.Atoi(cm.Annotations["count"])
		return n
	}
	var tally writeTally
	c, err := controller.New("fenced-restart", controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
		cm, err := cms.Lister().Get(key.Namespace, key.Name)
		if apierrors.IsNotFound(err) || (err == nil && cm.Labels["set"] != "fenced") {
			return controller.Result{}, nil
		}
		if err != nil {
			return controller.Result{}, err
		}
		n := count(cm)
		if n >= target {
			return controller.Result{}, nil
		}
		cm = cm.DeepCopy()
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations["count"] = strconv.Itoa(n + 1)
		_, err = cmClient.Update(ctx, cm, metav1.UpdateOptions{})
		return tally.result(err)
	}), controller.Options[controller.Key]{
		Workers:     2,
		Fences:      &controller.Fences{Auto: true, TTL: 5 * time.Minute},
		Metrics:     metrics,
		RateLimiter: kworkqueue.NewTypedItemExponentialFailureRateLimiter[controller.Key](time.Millisecond, 500*time.Millisecond),
	})
	require.NoError(t, err)
	require.NoError(t, controller.Watch(c, cms, controller.EnqueueObject))
	stop := env.RunController(env.Context(), c)
	defer func() { require.NoError(t, stop()) }()

	reached := func(n int) func() bool {
		return func() bool {
			list, err := env.Client().CoreV1().ConfigMaps(ns).List(env.Context(), metav1.ListOptions{LabelSelector: "set=fenced"})
			if err != nil || len(list.Items) != objects {
				return false
			}
			for i := range list.Items {
				if count(&list.Items[i]) < n {
					return false
				}
			}
			return true
		}
	}
	require.Eventually(t, reached(5), time.Minute, 10*time.Millisecond, "the counters are running")
	require.NoError(t, env.RestartAPIServer())
	require.Eventually(t, reached(target), 2*time.Minute, 10*time.Millisecond, "every counter reaches %d after the restart", target)
	require.NoError(t, env.QuietContext(env.Context(), time.Minute, testkit.DefaultQuietPeriod))

	assert.Zero(t, tally.conflicts.Load(), "no write conflicted with the controller's own")
	assert.Equal(t, int32(objects*target), tally.writes.Load(), "one write per increment")
	assert.Zero(t, c.Stats().Fenced, "no key is still held")
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP ctrlkit_controller_fence_timeouts_total Write fences released by their TTL instead of by the informer showing the write, per controller
# TYPE ctrlkit_controller_fence_timeouts_total counter
ctrlkit_controller_fence_timeouts_total{controller="fenced-restart"} 0
`), "ctrlkit_controller_fence_timeouts_total"), "every fence was released by the informer, none by its TTL")
}

// writeTally counts a counter controller's writes: a Reconcile's answer to its one write is a
// retry after a Conflict (counted) or another error, and an immediate requeue after a success
// (counted), so the next increment follows at once.
type writeTally struct{ conflicts, writes atomic.Int32 }

func (w *writeTally) result(err error) (controller.Result, error) {
	if err != nil {
		if apierrors.IsConflict(err) {
			w.conflicts.Add(1)
		}
		return controller.Result{}, err
	}
	w.writes.Add(1)
	return controller.Result{Requeue: true}, nil
}
