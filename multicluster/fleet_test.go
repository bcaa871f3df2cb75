package multicluster_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/multicluster"
)

func configMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// annotate is a Reconciler that marks each ConfigMap with the cluster it is
// in, through that cluster's client: a key reaching the wrong cluster
// would mark it wrongly or not find it.
func annotate(t *testing.T, fleet *multicluster.Fleet, seen *keys) controller.Reconciler[multicluster.Key] {
	return controller.ReconcilerFunc[multicluster.Key](func(ctx context.Context, k multicluster.Key) (controller.Result, error) {
		seen.add(k)
		cl, err := fleet.Get(k.Cluster)
		if err != nil {
			return controller.Result{}, err
		}
		cm, err := cl.Client.CoreV1().ConfigMaps(k.Namespace).Get(ctx, k.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return controller.Result{}, nil
		}
		if err != nil {
			return controller.Result{}, err
		}
		if cm.Annotations["cluster"] == k.Cluster {
			return controller.Result{}, nil
		}
		cm = cm.DeepCopy()
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations["cluster"] = k.Cluster
		_, err = cl.Client.CoreV1().ConfigMaps(k.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
		return controller.Result{}, err
	})
}

// annotating returns a Fleet with opts and, wired to it, the annotate
// controller watching ConfigMaps, and what it reconciled.
func annotating(t *testing.T, opts multicluster.Options) (*multicluster.Fleet, *controller.Controller[multicluster.Key], *keys) {
	t.Helper()
	fleet, err := multicluster.New(opts)
	require.NoError(t, err)
	seen := &keys{}
	c, err := multicluster.NewController(fleet, "annotate", annotate(t, fleet, seen), controller.Options[multicluster.Key]{})
	require.NoError(t, err)
	require.NoError(t, multicluster.Watch(fleet, c, multicluster.For[*corev1.ConfigMap](), controller.EnqueueObject))
	return fleet, c, seen
}

func annotated(t *testing.T, fleet *multicluster.Fleet, cluster, ns, name string) func() bool {
	return func() bool {
		cl, err := fleet.Get(cluster)
		if err != nil {
			return false
		}
		cm, err := cl.Client.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && cm.Annotations["cluster"] == cluster
	}
}

func TestOneControllerReconcilesEveryEngagedCluster(t *testing.T) {
	clusters := map[string]multicluster.Connection{}
	for _, name := range []string{"east", "west", "north"} {
		clusters[name], _ = fake(t, configMap("default", "shared"), configMap("default", "only-"+name))
	}
	fleet, c, seen := annotating(t, multicluster.Options{Provider: multicluster.NewList(clusters)})
	run(t, fleet, c)

	for _, name := range []string{"east", "west", "north"} {
		require.Eventually(t, annotated(t, fleet, name, "default", "shared"), wait, pollEvery, name)
		require.Eventually(t, annotated(t, fleet, name, "default", "only-"+name), wait, pollEvery, name)
		assert.Zero(t, seen.count(key(name, "default", "only-other")))
	}
	assert.Equal(t, []string{"east", "north", "west"}, fleet.Clusters())
	assert.Equal(t, "east/default/shared", key("east", "default", "shared").String())
	assert.Equal(t, "east/web", key("east", "", "web").String())

	// An event in one cluster reaches that cluster's key alone.
	west, err := fleet.Get("west")
	require.NoError(t, err)
	_, err = west.Client.CoreV1().ConfigMaps("default").Create(context.Background(), configMap("default", "late"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, annotated(t, fleet, "west", "default", "late"), wait, pollEvery)
	assert.Zero(t, seen.count(key("east", "default", "late")))
}

// A cluster engaged after the controller started is watched at once; one
// disengaged stops being watched, its keys are dropped, and its informers
// and goroutines are gone.
func TestEngageAndDisengageWhileRunning(t *testing.T) {
	first, _ := fake(t, configMap("default", "a"))
	list := multicluster.NewList(map[string]multicluster.Connection{"first": first})
	fleet, c, seen := annotating(t, multicluster.Options{Provider: list})
	run(t, fleet, c)
	require.Eventually(t, annotated(t, fleet, "first", "default", "a"), wait, pollEvery)
	require.Eventually(t, func() bool { return c.Stats().Idle() && c.Stats().Idle() }, wait, pollEvery)
	baseline := goroutines()
	before := goleak.IgnoreCurrent()

	second, fc := fake(t, configMap("default", "b"))
	require.NoError(t, list.Add("second", second))
	require.Eventually(t, annotated(t, fleet, "second", "default", "b"), wait, pollEvery)
	cl, err := fleet.Get("second")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return cl.Err() == nil }, wait, pollEvery)
	assert.Greater(t, goroutines(), baseline, "the second cluster runs informers")
	// Events into the cluster itself, from a broadcaster that leaves with it.
	cm, err := cl.Client.CoreV1().ConfigMaps("default").Get(context.Background(), "b", metav1.GetOptions{})
	require.NoError(t, err)
	cl.EventRecorder("fleet-test").Event(cm, corev1.EventTypeNormal, "Annotated", "annotated in cluster second")
	require.Eventually(t, func() bool {
		evs, err := fc.Clientset().CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		return err == nil && len(evs.Items) == 1 && evs.Items[0].Source.Component == "fleet-test" && evs.Items[0].InvolvedObject.Name == "b"
	}, wait, pollEvery)

	list.Remove("second")
	require.Eventually(t, func() bool { _, err := fleet.Get("second"); return err != nil }, wait, pollEvery)
	_, err = fleet.Get("second")
	assert.ErrorIs(t, err, multicluster.ErrNotEngaged)
	require.Eventually(t, func() bool { return cl.Context().Err() != nil }, wait, pollEvery)
	var leaked error
	require.Eventually(t, func() bool {
		leaked = goleak.Find(before, goleak.IgnoreAnyFunction("github.com/stretchr/testify/assert.Eventually.func1"))
		return leaked == nil
	}, wait, pollEvery, "disengaging leaves no goroutine behind: %v", leaked)
	_, err = fc.Clientset().CoreV1().ConfigMaps("default").Create(context.Background(), configMap("default", "after"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return c.Stats().Idle() && c.Stats().Idle() }, wait, pollEvery)
	assert.Zero(t, seen.count(key("second", "default", "after")), "a disengaged cluster is not watched")

	// The key of a cluster no longer engaged is dropped before its Reconcile.
	reconciled := seen.count(key("second", "default", "b"))
	c.Enqueue(key("second", "default", "b"))
	c.Enqueue(key("first", "default", "a"))
	require.Eventually(t, func() bool { return seen.count(key("first", "default", "a")) >= 2 }, wait, pollEvery)
	require.Eventually(t, func() bool { return c.Stats().Idle() && c.Stats().Idle() }, wait, pollEvery)
	assert.Equal(t, reconciled, seen.count(key("second", "default", "b")))
}

// A key of a cluster whose caches have not synced since it was engaged (a
// hub event mapped to it, an Enqueue) waits for them: a Reconcile never
// reads an empty cache and takes the cluster's objects for missing.
func TestKeysOfAClusterWaitForItsCachesToSync(t *testing.T) {
	slow, fc := fake(t, configMap("default", "a"))
	release := make(chan struct{})
	block := func(clienttesting.Action) (bool, runtime.Object, error) {
		<-release
		return false, nil, nil
	}
	fc.Clientset().PrependReactor("list", "configmaps", block)
	fc.Clientset().PrependWatchReactor("configmaps", func(clienttesting.Action) (bool, watch.Interface, error) {
		<-release
		return false, nil, nil
	})
	fleet, c, seen := annotating(t, multicluster.Options{Provider: multicluster.NewList(map[string]multicluster.Connection{"slow": slow})})
	run(t, fleet, c)
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	require.Eventually(t, func() bool { _, err := fleet.Get("slow"); return err == nil }, wait, pollEvery)
	c.Enqueue(key("slow", "default", "a"))
	require.Eventually(t, func() bool { return c.Stats().Idle() && c.Stats().Idle() }, wait, pollEvery)
	assert.Zero(t, seen.count(key("slow", "default", "a")), "held until the cluster's caches synced")
	cl, err := fleet.Get("slow")
	require.NoError(t, err)
	assert.ErrorContains(t, cl.Err(), "caches not synced: configmaps", "Err names the informer")

	close(release)
	require.Eventually(t, annotated(t, fleet, "slow", "default", "a"), wait, pollEvery)
}
