package multicluster_test

import (
	"context"
	goruntime "runtime"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/multicluster"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// fencedView watches a cluster's ConfigMaps in one view (typed, unstructured or
// metadata-only), then its Secrets in the same view: a second resource with the same Go type
// when the view is unstructured or metadata-only. It returns how a Reconcile reads whether
// ConfigMap default/name is in its cluster's cache.
type fencedView struct {
	name  string
	watch func(t *testing.T, fleet *multicluster.Fleet, c *controller.Controller[multicluster.Key]) func(cl *multicluster.Cluster, name string) (bool, error)
}

func watchView[T informer.Object](t *testing.T, fleet *multicluster.Fleet, c *controller.Controller[multicluster.Key], inf func(gvr schema.GroupVersionResource) func(*multicluster.Cluster) (informer.Informer[T], error)) func(*multicluster.Cluster, string) (bool, error) {
	cms := inf(configMapsGVR)
	require.NoError(t, multicluster.Watch(fleet, c, cms, controller.EnqueueObject))
	require.NoError(t, multicluster.Watch(fleet, c, inf(corev1.SchemeGroupVersion.WithResource("secrets")), controller.EnqueueObject))
	return func(cl *multicluster.Cluster, name string) (bool, error) {
		i, err := cms(cl)
		if err != nil {
			return false, err
		}
		_, err = i.Lister().Get("default", name)
		return err == nil, nil
	}
}

var fencedViews = []fencedView{
	{"typed", func(t *testing.T, fleet *multicluster.Fleet, c *controller.Controller[multicluster.Key]) func(*multicluster.Cluster, string) (bool, error) {
		require.NoError(t, multicluster.Watch(fleet, c, multicluster.For[*corev1.ConfigMap](), controller.EnqueueObject))
		require.NoError(t, multicluster.Watch(fleet, c, multicluster.For[*corev1.Secret](), controller.EnqueueObject))
		return func(cl *multicluster.Cluster, name string) (bool, error) { return cached(fleet, cl.Name, name) }
	}},
	{"unstructured", func(t *testing.T, fleet *multicluster.Fleet, c *controller.Controller[multicluster.Key]) func(*multicluster.Cluster, string) (bool, error) {
		return watchView(t, fleet, c, func(gvr schema.GroupVersionResource) func(*multicluster.Cluster) (informer.Informer[*unstructured.Unstructured], error) {
			return func(cl *multicluster.Cluster) (informer.Informer[*unstructured.Unstructured], error) {
				return informer.ForResource[*unstructured.Unstructured](cl.Factory, gvr)
			}
		})
	}},
	{"metadata", func(t *testing.T, fleet *multicluster.Fleet, c *controller.Controller[multicluster.Key]) func(*multicluster.Cluster, string) (bool, error) {
		return watchView(t, fleet, c, func(gvr schema.GroupVersionResource) func(*multicluster.Cluster) (informer.Informer[*metav1.PartialObjectMetadata], error) {
			return func(cl *multicluster.Cluster) (informer.Informer[*metav1.PartialObjectMetadata], error) {
				return informer.ForMetadata(cl.Factory, gvr)
			}
		})
	}},
}

// With Fences.Auto, a Reconcile's write into its cluster holds the key until that cluster's
// informer of the written resource shows it: the requeued key does not read the cache its own
// write has not reached. Every view of the resource is matched by resource, never by Go type:
// an unstructured or metadata-only informer of Secrets, declared after the ConfigMaps', would
// otherwise hold the key for the fence's TTL (an hour here). The cluster's watches are held
// back (a lagging watch cache) until the test lets them go.
func TestFencesAutoHoldAKeyUntilItsClustersCacheShowsTheWrite(t *testing.T) {
	for _, view := range fencedViews {
		t.Run("informer="+view.name, func(t *testing.T) { testFencesAuto(t, view) })
	}
}

func testFencesAuto(t *testing.T, view fencedView) {
	fc, err := fakecluster.New(configMap("default", "old"))
	require.NoError(t, err)
	conn := fc.Connect()
	catchUp := conn.Lag(fc.Snapshot(), configMapsGVR)
	fleet, err := multicluster.New(multicluster.Options{Provider: multicluster.NewList(map[string]multicluster.Connection{
		"east": {Client: conn.Clientset(), Dynamic: conn.Dynamic(), Metadata: conn.Metadata()}})})
	require.NoError(t, err)
	var mu sync.Mutex
	var sawMade []bool
	var inCache func(cl *multicluster.Cluster, name string) (bool, error)
	c, err := multicluster.NewController(fleet, "fenced", controller.ReconcilerFunc[multicluster.Key](func(ctx context.Context, k multicluster.Key) (controller.Result, error) {
		if k.Name != "old" && k.Name != "made" {
			return controller.Result{}, nil
		}
		cl, err := fleet.Get(k.Cluster)
		if err != nil {
			return controller.Result{}, err
		}
		saw, err := inCache(cl, "made")
		if err != nil {
			return controller.Result{}, err
		}
		mu.Lock()
		sawMade = append(sawMade, saw)
		first := len(sawMade) == 1
		mu.Unlock()
		if !first || k.Name != "old" {
			return controller.Result{}, nil
		}
		cmc, err := client.For[*corev1.ConfigMap](cl.Client)
		if err != nil {
			return controller.Result{}, err
		}
		if _, err := cmc.Create(ctx, configMap("default", "made"), metav1.CreateOptions{}); err != nil {
			return controller.Result{}, err
		}
		return controller.Result{Requeue: true}, nil
	}), controller.Options[multicluster.Key]{Fences: &controller.Fences{Auto: true, TTL: time.Hour}})
	require.NoError(t, err)
	inCache = view.watch(t, fleet, c)
	run(t, fleet, c)

	require.Eventually(t, func() bool { return c.Stats().Fenced == 1 }, wait, pollEvery, "the requeued key waits for its write")
	mu.Lock()
	assert.Equal(t, []bool{false}, sawMade, "no Reconcile while the cluster's cache lacks the write")
	mu.Unlock()

	catchUp()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(sawMade) >= 2 && c.Stats().Fenced == 0
	}, wait, pollEvery, "released by the cluster's ConfigMaps, not by the TTL")
	mu.Lock()
	defer mu.Unlock()
	for i, saw := range sawMade[1:] {
		assert.True(t, saw, "Reconcile %d read a cache without its own write", i+2)
	}
}

// A fence open on a cluster's informer when the cluster is disengaged lets its key go, and
// the controller's fence table keeps nothing of the cluster: it is collected.
func TestAFenceOpenOnADisengagedClusterIsDropped(t *testing.T) {
	list := multicluster.NewList(nil)
	fleet, err := multicluster.New(multicluster.Options{Provider: list})
	require.NoError(t, err)
	c, err := multicluster.NewController(fleet, "fenced", controller.ReconcilerFunc[multicluster.Key](func(ctx context.Context, k multicluster.Key) (controller.Result, error) {
		cl, err := fleet.Get(k.Cluster)
		if err != nil {
			return controller.Result{}, nil
		}
		cms, err := informer.For[*corev1.ConfigMap](cl.Factory)
		if err != nil {
			return controller.Result{}, err
		}
		// A write the cache will never show: the fence stays open.
		controller.Fence(ctx, cms, &metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name, ResourceVersion: "999999999"})
		return controller.Result{Requeue: true}, nil
	}), controller.Options[multicluster.Key]{Fences: &controller.Fences{TTL: time.Hour}})
	require.NoError(t, err)
	require.NoError(t, multicluster.Watch(fleet, c, multicluster.For[*corev1.ConfigMap](), controller.EnqueueObject))
	run(t, fleet, c)

	conn, _ := fake(t, configMap("default", "a"))
	require.NoError(t, list.Add("east", conn))
	require.Eventually(t, func() bool { return c.Stats().Fenced == 1 }, wait, pollEvery)
	cl, err := fleet.Get("east")
	require.NoError(t, err)
	cluster, factory := weak.Make(cl), weak.Make(cl.Factory)
	cl = nil

	list.Remove("east")
	require.Eventually(t, func() bool { return c.Stats().Fenced == 0 && c.Stats().Idle() }, wait, pollEvery, "the held key is let go")
	require.Eventually(t, func() bool {
		goruntime.GC()
		return cluster.Value() == nil && factory.Value() == nil
	}, wait, pollEvery, "the disengaged Cluster and its Factory are collected")
}
