package client_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit"
)

func names(items []*corev1.ConfigMap) []string {
	out := make([]string, len(items))
	for i, cm := range items {
		out[i] = cm.Namespace + "/" + cm.Name
	}
	return out
}

func TestCachedReadsTheCacheAndWritesTheServer(t *testing.T) {
	labelled := configMap("default", "b", nil)
	labelled.Labels = map[string]string{"app": "web"}
	env := testkit.NewFake(t, configMap("default", "a", map[string]string{"k": "v"}), labelled, configMap("other", "c", nil))
	ctx := env.Context()
	inf, err := informer.For[*corev1.ConfigMap](env.Factory())
	require.NoError(t, err)
	env.Sync()
	cms, err := client.NewCached(mustFor[*corev1.ConfigMap](t, env.Env), inf.Lister())
	require.NoError(t, err)
	// The informer watches after its list, which can come after Sync: wait for its watch, so
	// the actions below are this test's alone.
	require.Eventually(t, func() bool {
		for _, a := range env.Actions() {
			if a.GetVerb() == "watch" {
				return true
			}
		}
		return false
	}, 10*time.Second, time.Millisecond)

	env.ClearActions()
	got, err := cms.Get(ctx, "default", "a", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "v", got.Data["k"])
	// A copy: changing it leaves the cache alone.
	got.Data["k"] = "changed"
	fromCache, err := inf.Lister().Get("default", "a")
	require.NoError(t, err)
	require.Equal(t, "v", fromCache.Data["k"])

	_, err = cms.Get(ctx, "default", "missing", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err))

	list, err := cms.List(ctx, "default", metav1.ListOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"default/a", "default/b"}, names(list.Items))
	list, err = cms.List(ctx, "", metav1.ListOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"default/a", "default/b", "other/c"}, names(list.Items))
	list, err = cms.List(ctx, "", metav1.ListOptions{LabelSelector: "app=web"})
	require.NoError(t, err)
	require.Equal(t, []string{"default/b"}, names(list.Items))
	list, err = cms.List(ctx, "", metav1.ListOptions{FieldSelector: "metadata.name=c", Limit: 1})
	require.NoError(t, err)
	require.Equal(t, []string{"other/c"}, names(list.Items))
	require.Empty(t, env.Actions(), "reads never reach the server")

	_, err = cms.List(ctx, "", metav1.ListOptions{FieldSelector: "data.k=v"})
	require.ErrorIs(t, err, client.ErrInvalidInput)
	_, err = cms.List(ctx, "", metav1.ListOptions{Continue: "x"})
	require.ErrorIs(t, err, client.ErrInvalidInput)
	_, err = cms.List(ctx, "", metav1.ListOptions{LabelSelector: "=="})
	require.ErrorIs(t, err, client.ErrInvalidInput)
	_, err = cms.Get(ctx, "", "a", metav1.GetOptions{})
	require.ErrorIs(t, err, client.ErrInvalidInput)

	// Writes go to the API server; the cache catches up through the informer.
	got.Data["k"] = "new"
	_, err = cms.Update(ctx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Equal(t, "update", env.Actions()[0].GetVerb())
	require.Eventually(t, func() bool {
		cm, err := cms.Get(ctx, "default", "a", metav1.GetOptions{})
		return err == nil && cm.Data["k"] == "new"
	}, 10*time.Second, time.Millisecond)

	// CreateOrUpdate reads the cache.
	env.ClearActions()
	res, err := client.CreateOrUpdate(ctx, cms, configMap("default", "a", nil), setData("k", "new"))
	require.NoError(t, err)
	require.Equal(t, client.OperationResultNone, res)
	require.Empty(t, env.Actions())

	_, err = client.NewCached[*corev1.ConfigMap](nil, inf.Lister())
	require.ErrorIs(t, err, client.ErrInvalidInput)
	_, err = client.NewCached(mustFor[*corev1.ConfigMap](t, env.Env), nil)
	require.ErrorIs(t, err, client.ErrInvalidInput)
}

// A lister without Namespace (only Get and List) serves namespaced lists by filtering.
func TestCachedWithAPlainLister(t *testing.T) {
	env := testkit.NewFake(t)
	ctx := env.Context()
	cms, err := client.NewCached(mustFor[*corev1.ConfigMap](t, env.Env), staleLister{configMap("default", "a", nil)})
	require.NoError(t, err)
	list, err := cms.List(ctx, "other", metav1.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, list.Items)
	list, err = cms.List(ctx, "default", metav1.ListOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"default/a"}, names(list.Items))
}

// podLister serves one Pod.
type podLister struct{ pod *corev1.Pod }

func (l podLister) Get(namespace, name string) (*corev1.Pod, error) {
	if l.pod.Namespace != namespace || l.pod.Name != name {
		return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
	}
	return l.pod, nil
}

func (l podLister) List(labels.Selector) ([]*corev1.Pod, error) { return []*corev1.Pod{l.pod}, nil }
