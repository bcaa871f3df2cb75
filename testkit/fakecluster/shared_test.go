package fakecluster_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

var (
	podsGVR       = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

func unstructuredPod(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Pod")
	u.SetNamespace("default")
	u.SetName(name)
	_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"name": "c", "image": "nginx"}}, "spec", "containers")
	return u
}

func withWidgets(t *testing.T, objs ...runtime.Object) *fakecluster.Cluster {
	t.Helper()
	c, err := fakecluster.NewWithOptions(fakecluster.Options{Resources: []fakecluster.Resource{widgets}, Objects: objs})
	require.NoError(t, err)
	return c
}

func rvOf(t *testing.T, rv string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(rv, 10, 64)
	require.NoError(t, err)
	return n
}

func TestTypedWritesAreVisibleThroughDynamicAndBack(t *testing.T) {
	ctx := context.Background()
	c := withWidgets(t)
	cms := c.Dynamic().Resource(configMapsGVR).Namespace("default")

	typed, err := c.Clientset().CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "default"}, Data: map[string]string{"k": "typed"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	u, err := cms.Get(ctx, "cm", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "ConfigMap", u.GetKind())
	assert.Equal(t, "v1", u.GetAPIVersion())
	assert.Equal(t, typed.UID, u.GetUID())
	assert.Equal(t, typed.ResourceVersion, u.GetResourceVersion())
	v, _, _ := unstructured.NestedString(u.Object, "data", "k")
	assert.Equal(t, "typed", v)

	require.NoError(t, unstructured.SetNestedField(u.Object, "dynamic", "data", "k"))
	updated, err := cms.Update(ctx, u, metav1.UpdateOptions{})
	require.NoError(t, err)
	back, err := c.Clientset().CoreV1().ConfigMaps("default").Get(ctx, "cm", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "dynamic", back.Data["k"])
	assert.Equal(t, updated.GetResourceVersion(), back.ResourceVersion)
	assert.Empty(t, back.Kind, "typed reads carry no TypeMeta, as from a real typed client")

	// Created through the dynamic client, a Pod is a *corev1.Pod for the typed one.
	created, err := c.Dynamic().Resource(podsGVR).Namespace("default").Create(ctx, unstructuredPod("p"), metav1.CreateOptions{})
	require.NoError(t, err)
	phase, _, _ := unstructured.NestedString(created.Object, "status", "phase")
	assert.Equal(t, "Pending", phase, "the same create rules")
	pod, err := c.Clientset().CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "nginx", pod.Spec.Containers[0].Image)

	list, err := c.Dynamic().Resource(podsGVR).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	assert.Equal(t, "Pod", list.Items[0].GetKind())

	require.NoError(t, c.Dynamic().Resource(podsGVR).Namespace("default").Delete(ctx, "p", metav1.DeleteOptions{}))
	_, err = c.Clientset().CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

func TestOneResourceVersionCounterAcrossKinds(t *testing.T) {
	ctx := context.Background()
	c := withWidgets(t, widget("seed", 1))
	seed, err := c.Dynamic().Resource(gvr).Namespace("default").Get(ctx, "seed", metav1.GetOptions{})
	require.NoError(t, err)

	var rvs []int64
	rvs = append(rvs, rvOf(t, seed.GetResourceVersion()))
	cm, err := c.Clientset().CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	rvs = append(rvs, rvOf(t, cm.ResourceVersion))
	w, err := c.Dynamic().Resource(gvr).Namespace("default").Create(ctx, widget("w", 1), metav1.CreateOptions{})
	require.NoError(t, err)
	rvs = append(rvs, rvOf(t, w.GetResourceVersion()))
	p, err := c.Clientset().CoreV1().Pods("default").Create(ctx, pod("p"), metav1.CreateOptions{})
	require.NoError(t, err)
	rvs = append(rvs, rvOf(t, p.ResourceVersion))
	for i := 1; i < len(rvs); i++ {
		assert.Greater(t, rvs[i], rvs[i-1], "resourceVersions increase across resources: %v", rvs)
	}

	// A list's resourceVersion is the cluster's, whatever the resource.
	list, err := c.Dynamic().Resource(gvr).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, p.ResourceVersion, list.GetResourceVersion())
	pods, err := c.Clientset().CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, p.ResourceVersion, pods.ResourceVersion)
}

func TestCustomResourceWithoutStatusSubresource(t *testing.T) {
	ctx := context.Background()
	gadgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	c, err := fakecluster.NewWithOptions(fakecluster.Options{Resources: []fakecluster.Resource{
		{GVR: gadgets, Kind: "Gadget", Namespaced: false},
	}})
	require.NoError(t, err)
	g := &unstructured.Unstructured{}
	g.SetAPIVersion("example.com/v1")
	g.SetKind("Gadget")
	g.SetName("g")
	g.Object["status"] = map[string]any{"seen": int64(1)}
	created, err := c.Dynamic().Resource(gadgets).Create(ctx, g, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.NotNil(t, created.Object["status"], "without a status subresource status is an ordinary field")

	created.Object["status"] = map[string]any{"seen": int64(2)}
	up, err := c.Dynamic().Resource(gadgets).Update(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(2), up.GetGeneration(), "every change but metadata bumps generation")

	_, err = c.Dynamic().Resource(gadgets).UpdateStatus(ctx, up, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsNotFound(err), "no /status: %v", err)
	_, err = c.Dynamic().Resource(gadgets).Namespace("default").Get(ctx, "g", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "a cluster-scoped resource has no namespaced path: %v", err)
}

func TestUndeclaredResourceIsAClearErrorNotAPanic(t *testing.T) {
	ctx := context.Background()
	c, err := fakecluster.New()
	require.NoError(t, err)
	res := c.Dynamic().Resource(gvr).Namespace("default")

	_, err = res.List(ctx, metav1.ListOptions{})
	require.ErrorIs(t, err, fakecluster.ErrUndeclaredResource)
	var undeclared *fakecluster.UndeclaredResourceError
	require.ErrorAs(t, err, &undeclared)
	assert.Equal(t, gvr, undeclared.GVR)
	assert.Contains(t, err.Error(), "widgets.example.com/v1")
	assert.Contains(t, err.Error(), "Options.Resources")
	assert.True(t, apierrors.IsNotFound(err), "a server answers 404 for a resource it does not serve")
	var status apierrors.APIStatus
	require.ErrorAs(t, err, &status)
	assert.Equal(t, int32(http.StatusNotFound), status.Status().Code)

	_, err = res.Watch(ctx, metav1.ListOptions{})
	assert.ErrorIs(t, err, fakecluster.ErrUndeclaredResource)
	_, err = res.Create(ctx, widget("w", 1), metav1.CreateOptions{})
	assert.ErrorIs(t, err, fakecluster.ErrUndeclaredResource)
	_, err = c.Tracker().List(gvr, schema.GroupVersionKind{}, "default")
	assert.ErrorIs(t, err, fakecluster.ErrUndeclaredResource)

	// A seed object introduces its kind: no declaration needed to list it.
	seeded, err := fakecluster.New(widget("w", 1))
	require.NoError(t, err)
	list, err := seeded.Dynamic().Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	assert.Equal(t, "WidgetList", list.GetKind())
}

// A watch started from a list's resourceVersion replays what changed in between, deletions
// included, as an API server's does: an informer that lists and then watches loses nothing.
func TestWatchFromAListResourceVersionReplaysTheGap(t *testing.T) {
	ctx := context.Background()
	c := withWidgets(t, widget("a", 1), widget("b", 1))
	res := c.Dynamic().Resource(gvr).Namespace("default")
	list, err := res.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 2)

	// Between the list and the watch: one create, one update, one delete, and a write to
	// another resource that the watch must not show.
	_, err = res.Create(ctx, widget("c", 1), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = res.Patch(ctx, "a", types.MergePatchType, []byte(`{"spec":{"size":2}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.NoError(t, res.Delete(ctx, "b", metav1.DeleteOptions{}))
	_, err = c.Clientset().CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	w, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	require.NoError(t, err)
	defer w.Stop()
	var got []string
	for range 3 {
		ev := next(t, w)
		got = append(got, string(ev.Type)+" "+ev.Object.(*unstructured.Unstructured).GetName())
	}
	assert.Equal(t, []string{"ADDED c", "MODIFIED a", "DELETED b"}, got)

	// Without a resourceVersion a watch starts with the current state.
	all, err := res.Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer all.Stop()
	got = nil
	for range 2 {
		ev := next(t, all)
		got = append(got, string(ev.Type)+" "+ev.Object.(*unstructured.Unstructured).GetName())
	}
	assert.Equal(t, []string{"ADDED a", "ADDED c"}, got)
}

func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		require.True(t, ok, "the watch closed")
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
		return watch.Event{}
	}
}

func TestWatchFromACompactedResourceVersionIsGone(t *testing.T) {
	ctx := context.Background()
	c, err := fakecluster.NewWithOptions(fakecluster.Options{EventHistory: 2})
	require.NoError(t, err)
	cms := c.Clientset().CoreV1().ConfigMaps("default")
	first, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, name := range []string{"b", "c", "d"} {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, err = cms.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	assert.True(t, apierrors.IsResourceExpired(err) || apierrors.IsGone(err), "410 after compaction: %v", err)
}

// The store hands out copies: a watcher or reader that mutates what it got changes nothing.
func TestReadersShareNoMemoryWithTheStore(t *testing.T) {
	ctx := context.Background()
	c, err := fakecluster.New()
	require.NoError(t, err)
	cms := c.Clientset().CoreV1().ConfigMaps("default")
	w, err := cms.Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer w.Stop()
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	ev := next(t, w)
	ev.Object.(*corev1.ConfigMap).Data["k"] = "changed by a watcher"
	got, err := cms.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	got.Data["k"] = "changed by a reader"
	again, err := cms.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "v", again.Data["k"])
}

func TestTrackerIsTheStore(t *testing.T) {
	ctx := context.Background()
	c := withWidgets(t)
	require.NoError(t, c.Tracker().Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default"}}))
	got, err := c.Clientset().CoreV1().ConfigMaps("default").Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, got.UID, "Add stamps like a seed")

	obj, err := c.Tracker().Get(configMapsGVR, "default", "a")
	require.NoError(t, err)
	cm := obj.(*corev1.ConfigMap)
	cm.Data = map[string]string{"behind": "the front ends"}
	require.NoError(t, c.Tracker().Update(configMapsGVR, cm, "default"))
	got2, err := c.Clientset().CoreV1().ConfigMaps("default").Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "the front ends", got2.Data["behind"])
	assert.NotEqual(t, got.ResourceVersion, got2.ResourceVersion)

	list, err := c.Tracker().List(gvr, schema.GroupVersionKind{}, "")
	require.NoError(t, err)
	assert.IsType(t, &unstructured.UnstructuredList{}, list)
	assert.True(t, apierrors.IsBadRequest(c.Tracker().Apply(configMapsGVR, cm, "default")), "server-side apply is refused")
	require.NoError(t, c.Tracker().Delete(configMapsGVR, "default", "a"))
}

func TestDeletePreconditionsAndCollections(t *testing.T) {
	ctx := context.Background()
	c := withWidgets(t, widget("a", 1), widget("b", 1))
	res := c.Dynamic().Resource(gvr).Namespace("default")
	other := types.UID("other")
	err := res.Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &other}})
	assert.True(t, apierrors.IsConflict(err), "%v", err)
	stale := "12345"
	err = res.Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &stale}})
	assert.True(t, apierrors.IsConflict(err), "%v", err)

	labelled := widget("c", 1)
	labelled.SetLabels(map[string]string{"doomed": "yes"})
	_, err = res.Create(ctx, labelled, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, res.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "doomed=yes"}))
	list, err := res.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, list.Items, 2)
	require.NoError(t, res.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
	list, err = res.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, list.Items)
}

// A watch with a label selector sees an object leave it as a deletion and enter it as an
// addition, as from an API server; field selectors match field paths.
func TestSelectorsOnListAndWatch(t *testing.T) {
	ctx := context.Background()
	c, err := fakecluster.New()
	require.NoError(t, err)
	pods := c.Clientset().CoreV1().Pods("default")
	w, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	require.NoError(t, err)
	defer w.Stop()

	p := pod("p") // app=web
	created, err := pods.Create(ctx, p, metav1.CreateOptions{})
	require.NoError(t, err)
	out := created.DeepCopy()
	out.Labels = map[string]string{"app": "other"}
	out, err = pods.Update(ctx, out, metav1.UpdateOptions{})
	require.NoError(t, err)
	back := out.DeepCopy()
	back.Labels = map[string]string{"app": "web"}
	_, err = pods.Update(ctx, back, metav1.UpdateOptions{})
	require.NoError(t, err)

	var got []watch.EventType
	for range 3 {
		ev := next(t, w)
		got = append(got, ev.Type)
		if ev.Type == watch.Deleted {
			assert.Equal(t, out.ResourceVersion, ev.Object.(*corev1.Pod).ResourceVersion, "the deletion is the update that left the selector")
		}
	}
	assert.Equal(t, []watch.EventType{watch.Added, watch.Deleted, watch.Added}, got)

	bound := pod("bound")
	bound.Spec.NodeName = "node-a"
	_, err = pods.Create(ctx, bound, metav1.CreateOptions{})
	require.NoError(t, err)
	list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-a"})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	assert.Equal(t, "bound", list.Items[0].Name)
	list, err = pods.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=p,status.phase=Pending"})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	assert.Equal(t, "p", list.Items[0].Name)
}

// Writers on both front ends and a watcher at once: every write gets its own resourceVersion
// and the watcher sees every one of them, in order (run with -race).
func TestConcurrentWritersThroughBothFrontEnds(t *testing.T) {
	ctx := context.Background()
	c := withWidgets(t)
	w, err := c.Tracker().Watch(gvr, "default")
	require.NoError(t, err)
	defer w.Stop()
	cmWatch, err := c.Clientset().CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer cmWatch.Stop()

	const n = 20
	errs := make(chan error, 2*n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := c.Dynamic().Resource(gvr).Namespace("default").Create(ctx, widget(fmt.Sprint("w-", i), int64(i)), metav1.CreateOptions{})
			errs <- err
		}()
		go func() {
			defer wg.Done()
			_, err := c.Clientset().CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("cm-", i)}}, metav1.CreateOptions{})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	seen := map[int64]bool{}
	for _, watcher := range []watch.Interface{w, cmWatch} {
		last := int64(0)
		for range n {
			ev := next(t, watcher)
			require.Equal(t, watch.Added, ev.Type)
			m, err := meta.Accessor(ev.Object)
			require.NoError(t, err)
			rv := rvOf(t, m.GetResourceVersion())
			assert.Greater(t, rv, last, "events arrive in resourceVersion order")
			assert.False(t, seen[rv], "resourceVersion %d given twice", rv)
			seen[rv], last = true, rv
		}
	}
	assert.Len(t, seen, 2*n)
}
