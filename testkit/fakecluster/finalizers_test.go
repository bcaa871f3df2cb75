package fakecluster_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// An object with finalizers is only marked deleted; it goes when its last finalizer is
// removed, and no finalizer can be added meanwhile: what a controller's finalizer relies on.
func TestDeleteHonoursFinalizers(t *testing.T) {
	cs := newCluster(t)
	ctx := t.Context()
	cms := cs.CoreV1().ConfigMaps("default")
	_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "guarded",
		Finalizers: []string{"example.com/a", "example.com/b"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	w, err := cms.Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer w.Stop()

	require.NoError(t, cms.Delete(ctx, "guarded", metav1.DeleteOptions{}))
	cm, err := cms.Get(ctx, "guarded", metav1.GetOptions{})
	require.NoError(t, err, "still there: it has finalizers")
	require.NotNil(t, cm.DeletionTimestamp)
	assert.Equal(t, int64(0), *cm.DeletionGracePeriodSeconds)
	marked := cm.ResourceVersion
	require.NoError(t, cms.Delete(ctx, "guarded", metav1.DeleteOptions{}), "a second delete is accepted")
	cm, err = cms.Get(ctx, "guarded", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, marked, cm.ResourceVersion, "and changes nothing")

	cm.Finalizers = append(cm.Finalizers, "example.com/late")
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsInvalid(err), "no new finalizer on an object being deleted (422, metadata.finalizers Forbidden): %v", err)

	_, err = cms.Patch(ctx, "guarded", types.MergePatchType, []byte(`{"metadata":{"finalizers":["example.com/b"]}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	cm, err = cms.Get(ctx, "guarded", metav1.GetOptions{})
	require.NoError(t, err, "one finalizer left")
	assert.Equal(t, []string{"example.com/b"}, cm.Finalizers)
	cm.Finalizers = nil
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = cms.Get(ctx, "guarded", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the last finalizer's removal completes the deletion: %v", err)

	var got []watch.EventType
	for len(got) < 4 {
		select {
		case ev := <-w.ResultChan():
			got = append(got, ev.Type)
		case <-time.After(10 * time.Second):
			t.Fatalf("watch events so far: %v", got)
		}
	}
	assert.Equal(t, []watch.EventType{watch.Added, watch.Modified, watch.Modified, watch.Deleted}, got,
		"the existing object, marked, one finalizer removed, gone: the last removal is the deletion itself, as on kube-apiserver")
}

// Without finalizers a delete is immediate, and DeleteCollection marks what has finalizers.
func TestDeleteCollectionHonoursFinalizers(t *testing.T) {
	cs := newCluster(t)
	ctx := t.Context()
	cms := cs.CoreV1().ConfigMaps("default")
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "plain", Labels: map[string]string{"app": "x"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Labels: map[string]string{"app": "x"}, Finalizers: []string{"example.com/a"}}},
	} {
		_, err := cms.Create(ctx, cm, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app=x"}))
	list, err := cms.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	assert.Equal(t, "guarded", list.Items[0].Name)
	assert.NotNil(t, list.Items[0].DeletionTimestamp)
}
