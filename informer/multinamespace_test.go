package informer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// newComposite is a multiNamespace over never-started informers of
// namespaces a and b, for testing the store and index routing directly.
func newComposite(t *testing.T) (*multiNamespace, *Factory) {
	t.Helper()
	f := NewFactory(newClient(), Options{})
	t.Cleanup(f.Shutdown)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}}, nil
		},
		WatchFuncWithContext: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			if opts.SendInitialEvents != nil {
				// A streaming list: refuse it, so the reflector lists.
				return nil, errors.New("watch-list not supported")
			}
			return watch.NewFake(), nil
		},
	}
	byNS := map[string]cache.SharedIndexInformer{}
	for _, ns := range []string{"b", "a"} {
		byNS[ns] = cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	return newMultiNamespace(f, "pods", byNS), f
}

func TestMultiNamespaceStoreRouting(t *testing.T) {
	m, _ := newComposite(t)
	idx := m.GetIndexer()
	require.NoError(t, idx.Add(pod("a", "p1", map[string]string{"app": "x"})))
	require.NoError(t, idx.Add(pod("b", "p2", map[string]string{"app": "x"})))
	require.NoError(t, idx.Update(pod("b", "p2", map[string]string{"app": "y"})))
	err := idx.Add(pod("c", "p3", nil))
	assert.ErrorContains(t, err, `object "c/p3" is outside the namespaces a,b`)

	assert.Equal(t, []string{"a/p1"}, m.view.Load().byNS["a"].GetIndexer().ListKeys(), "each object lives in its namespace's store")
	assert.ElementsMatch(t, []string{"a/p1", "b/p2"}, idx.ListKeys())
	assert.Len(t, idx.List(), 2)
	got, exists, err := idx.Get(pod("b", "p2", nil))
	require.NoError(t, err)
	require.True(t, exists)
	assert.Equal(t, "y", got.(*corev1.Pod).Labels["app"])
	_, exists, err = idx.GetByKey("c/p3")
	require.NoError(t, err)
	assert.False(t, exists)

	require.NoError(t, idx.AddIndexers(cache.Indexers{"app": func(obj any) ([]string, error) {
		return []string{obj.(*corev1.Pod).Labels["app"]}, nil
	}}))
	assert.Contains(t, idx.GetIndexers(), "app")
	byApp, err := idx.ByIndex("app", "x")
	require.NoError(t, err)
	assert.Len(t, byApp, 1)
	keys, err := idx.IndexKeys(cache.NamespaceIndex, "b")
	require.NoError(t, err)
	assert.Equal(t, []string{"b/p2"}, keys)
	keys, err = idx.IndexKeys(cache.NamespaceIndex, "c")
	require.NoError(t, err)
	assert.Empty(t, keys)
	keys, err = idx.IndexKeys("app", "y")
	require.NoError(t, err)
	assert.Equal(t, []string{"b/p2"}, keys)
	assert.Equal(t, []string{"a", "b"}, idx.ListIndexFuncValues(cache.NamespaceIndex))
	same, err := idx.Index("app", pod("z", "any", map[string]string{"app": "x"}))
	require.NoError(t, err)
	assert.Len(t, same, 1)
	inC, err := idx.ByIndex(cache.NamespaceIndex, "c")
	require.NoError(t, err)
	assert.Empty(t, inC)

	// Replace splits by namespace; an object outside is refused.
	require.NoError(t, idx.Replace([]any{pod("a", "q1", nil), pod("a", "q2", nil)}, "9"))
	assert.ElementsMatch(t, []string{"a/q1", "a/q2"}, idx.ListKeys(), "namespace b was replaced with nothing")
	assert.Equal(t, "9", idx.LastStoreSyncResourceVersion())
	assert.Error(t, idx.Replace([]any{pod("c", "x", nil)}, "10"))
	require.NoError(t, idx.Resync())
	idx.Bookmark("11")
	require.NoError(t, idx.Delete(pod("a", "q1", nil)))
	require.NoError(t, idx.Delete(cache.DeletedFinalStateUnknown{Key: "a/q2", Obj: pod("a", "q2", nil)}))
	assert.Empty(t, idx.ListKeys())
	assert.Same(t, m, m.GetController())
	assert.Equal(t, "", m.LastSyncResourceVersion(), "never synced")
}

func TestMultiNamespaceRunsAndSyncs(t *testing.T) {
	m, _ := newComposite(t)
	var added []string
	reg, err := m.AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{}, time.Minute)
	require.NoError(t, err)
	_, err = m.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) { added = append(added, objectKey(obj.(*corev1.Pod))) }})
	require.NoError(t, err)
	require.NoError(t, m.SetTransform(func(obj any) (any, error) { return obj, nil }))
	require.NoError(t, m.SetWatchErrorHandler(func(*cache.Reflector, error) {}))
	require.NoError(t, m.SetWatchErrorHandlerWithContext(func(context.Context, *cache.Reflector, error) {}))
	assert.False(t, m.HasSynced())
	assert.False(t, reg.HasSynced())

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(stop)
	}()
	select {
	case <-m.HasSyncedChecker().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("not synced")
	}
	assert.True(t, m.HasSynced())
	assert.Equal(t, "7", m.LastSyncResourceVersion(), "every namespace listed at 7")
	select {
	case <-reg.HasSyncedChecker().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("handler not synced")
	}
	assert.True(t, reg.HasSynced())
	assert.Contains(t, m.HasSyncedChecker().Name(), "in namespaces a,b")
	assert.Error(t, m.SetTransform(func(obj any) (any, error) { return obj, nil }), "started informers refuse a transform")
	assert.False(t, m.IsStopped())
	close(stop)
	<-done
	assert.True(t, m.IsStopped())
	require.NoError(t, m.RemoveEventHandler(reg))
	assert.Empty(t, added)
}
