package multicluster_test

import (
	"context"
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/multicluster"
)

// A cluster-scoped owner (a Namespace) with a namespaced child (its policy
// ConfigMap), in each of two clusters: drift of the child in one cluster
// reaches that cluster's owner, and is repaired there alone.
func TestOwnsRepairsDriftPerClusterWithAClusterScopedOwner(t *testing.T) {
	clusters := map[string]multicluster.Connection{}
	for _, name := range []string{"a", "b"} {
		clusters[name], _ = fake(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}})
	}
	fleet, err := multicluster.New(multicluster.Options{Provider: multicluster.NewList(clusters)})
	require.NoError(t, err)
	var seen keys
	r := controller.ReconcilerFunc[multicluster.Key](func(ctx context.Context, k multicluster.Key) (controller.Result, error) {
		seen.add(k)
		cl, err := fleet.Get(k.Cluster)
		if err != nil {
			return controller.Result{}, err
		}
		ns, err := cl.Client.CoreV1().Namespaces().Get(ctx, k.Name, metav1.GetOptions{})
		if err != nil {
			return controller.Result{}, client404(err)
		}
		want := map[string]string{"rule": "deny-all"}
		cms := cl.Client.CoreV1().ConfigMaps(ns.Name)
		cm, err := cms.Get(ctx, "policy", metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "policy",
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ns, corev1.SchemeGroupVersion.WithKind("Namespace"))}}, Data: want}
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			return controller.Result{}, err
		case err != nil:
			return controller.Result{}, err
		case !maps.Equal(cm.Data, want):
			cm = cm.DeepCopy()
			cm.Data = want
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
			return controller.Result{}, err
		}
		return controller.Result{}, nil
	})
	c, err := multicluster.NewController(fleet, "policy", r, controller.Options[multicluster.Key]{})
	require.NoError(t, err)
	require.NoError(t, multicluster.Watch(fleet, c, multicluster.For[*corev1.Namespace](), controller.EnqueueObject))
	require.NoError(t, multicluster.Owns(fleet, c, multicluster.For[*corev1.ConfigMap](), multicluster.For[*corev1.Namespace]()))
	run(t, fleet, c)

	policy := func(cluster string) func() bool {
		return func() bool {
			cl, err := fleet.Get(cluster)
			if err != nil {
				return false
			}
			cm, err := cl.Client.CoreV1().ConfigMaps("team").Get(context.Background(), "policy", metav1.GetOptions{})
			return err == nil && cm.Data["rule"] == "deny-all"
		}
	}
	require.Eventually(t, policy("a"), wait, pollEvery)
	require.Eventually(t, policy("b"), wait, pollEvery)
	require.Eventually(t, func() bool { return c.Stats().Idle() && c.Stats().Idle() }, wait, pollEvery)
	a, b := seen.count(key("a", "", "team")), seen.count(key("b", "", "team"))

	// Drift in b: the child is deleted.
	clB, err := fleet.Get("b")
	require.NoError(t, err)
	require.NoError(t, clB.Client.CoreV1().ConfigMaps("team").Delete(context.Background(), "policy", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return seen.count(key("b", "", "team")) > b }, wait, pollEvery)
	require.Eventually(t, policy("b"), wait, pollEvery)
	require.Eventually(t, func() bool { return c.Stats().Idle() && c.Stats().Idle() }, wait, pollEvery)
	assert.Zero(t, seen.count(key("b", "team", "policy")), "a child's event enqueues its owner, not itself")

	// Drift in a: the child is edited.
	clA, err := fleet.Get("a")
	require.NoError(t, err)
	cm, err := clA.Client.CoreV1().ConfigMaps("team").Get(context.Background(), "policy", metav1.GetOptions{})
	require.NoError(t, err)
	cm.Data = map[string]string{"rule": "allow-all"}
	_, err = clA.Client.CoreV1().ConfigMaps("team").Update(context.Background(), cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return seen.count(key("a", "", "team")) > a }, wait, pollEvery)
	require.Eventually(t, policy("a"), wait, pollEvery)
}

func client404(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Unstructured and metadata-only informers of a custom resource, in two
// clusters: keys carry the cluster whatever the informer's kind.
func TestWatchUnstructuredAndMetadataInEveryCluster(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	widget := func(ns, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("example.com/v1")
		u.SetKind("Widget")
		u.SetNamespace(ns)
		u.SetName(name)
		return u
	}
	clusters := map[string]multicluster.Connection{}
	clusters["one"], _ = fake(t, widget("default", "w1"))
	clusters["two"], _ = fake(t, widget("default", "w2"))
	fleet, err := multicluster.New(multicluster.Options{Provider: multicluster.NewList(clusters)})
	require.NoError(t, err)

	var full, meta keys
	mk := func(seen *keys) controller.Reconciler[multicluster.Key] {
		return controller.ReconcilerFunc[multicluster.Key](func(_ context.Context, k multicluster.Key) (controller.Result, error) {
			seen.add(k)
			return controller.Result{}, nil
		})
	}
	cu, err := multicluster.NewController(fleet, "unstructured", mk(&full), controller.Options[multicluster.Key]{})
	require.NoError(t, err)
	require.NoError(t, multicluster.Watch(fleet, cu, func(cl *multicluster.Cluster) (informer.Informer[*unstructured.Unstructured], error) {
		return informer.ForResource[*unstructured.Unstructured](cl.Factory, gvr)
	}, controller.EnqueueObject))
	cm, err := multicluster.NewController(fleet, "metadata", mk(&meta), controller.Options[multicluster.Key]{})
	require.NoError(t, err)
	require.NoError(t, multicluster.Watch(fleet, cm, func(cl *multicluster.Cluster) (informer.Informer[*metav1.PartialObjectMetadata], error) {
		return informer.ForMetadata(cl.Factory, gvr)
	}, controller.EnqueueObject))
	run(t, fleet, cu, cm)

	for _, seen := range []*keys{&full, &meta} {
		require.Eventually(t, func() bool {
			return seen.count(key("one", "default", "w1")) > 0 && seen.count(key("two", "default", "w2")) > 0
		}, wait, pollEvery)
		assert.Zero(t, seen.count(key("one", "default", "w2")))
	}
}
