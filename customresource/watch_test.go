package customresource_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
)

// next reads one event, failing the test if none arrives within 10s (a deadlock guard,
// not a timing assertion: events are normally there at once).
func next[T customresource.Object](t *testing.T, w *customresource.Watcher[T]) customresource.Event[T] {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		require.True(t, ok, "watch closed early")
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event")
		return customresource.Event[T]{}
	}
}

func requireClosed[T customresource.Object](t *testing.T, w *customresource.Watcher[T]) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		require.False(t, ok, "want closed channel, got event %+v", ev)
	case <-time.After(10 * time.Second):
		t.Fatal("watch channel not closed")
	}
}

func TestWatchDeliversTypedEvents(t *testing.T) {
	ctx := context.Background()
	dyn := newFake(t)
	podsets := newClient(t, dyn)
	w, err := podsets.Watch(ctx, "default", metav1.ListOptions{})
	require.NoError(t, err)
	defer w.Stop()

	_, err = podsets.Create(ctx, podSet("default", "web", 1), metav1.CreateOptions{})
	require.NoError(t, err)
	ev := next(t, w)
	require.Equal(t, watch.Added, ev.Type)
	require.NoError(t, ev.Err)
	require.Equal(t, "web", ev.Object.Name)
	require.Equal(t, int32(1), *ev.Object.Spec.Replicas)

	ev.Object.Spec.Replicas = new(int32(2))
	_, err = podsets.Update(ctx, ev.Object, metav1.UpdateOptions{})
	require.NoError(t, err)
	ev = next(t, w)
	require.Equal(t, watch.Modified, ev.Type)
	require.Equal(t, int32(2), *ev.Object.Spec.Replicas)

	// A malformed object is an Error event naming it, and the watch goes on.
	_, err = dyn.Resource(v1alpha1.GVR).Namespace("default").Create(ctx, malformed("default", "bad"), metav1.CreateOptions{})
	require.NoError(t, err)
	ev = next(t, w)
	require.Equal(t, watch.Error, ev.Type)
	require.Nil(t, ev.Object)
	var convErr *customresource.ConversionError
	require.ErrorAs(t, ev.Err, &convErr)
	require.Equal(t, "default", convErr.Namespace)
	require.Equal(t, "bad", convErr.Name)

	require.NoError(t, podsets.Delete(ctx, "default", "web", metav1.DeleteOptions{}))
	ev = next(t, w)
	require.Equal(t, watch.Deleted, ev.Type)
	require.Equal(t, "web", ev.Object.Name)

	w.Stop()
	requireClosed(t, w)
}

// fakeWatch makes the client's next Watch return fw.
func fakeWatch(t *testing.T) (*customresource.Watcher[*v1alpha1.PodSet], *watch.FakeWatcher) {
	t.Helper()
	dyn := newFake(t)
	fw := watch.NewFake()
	dyn.PrependWatchReactor("podsets", func(clienttesting.Action) (bool, watch.Interface, error) {
		return true, fw, nil
	})
	w, err := newClient(t, dyn).Watch(context.Background(), "", metav1.ListOptions{})
	require.NoError(t, err)
	return w, fw
}

func TestWatchErrorEvents(t *testing.T) {
	w, fw := fakeWatch(t)
	defer w.Stop()

	// The API server's error status becomes an *apierrors.StatusError.
	go fw.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"})
	ev := next(t, w)
	require.Equal(t, watch.Error, ev.Type)
	require.True(t, apierrors.IsResourceExpired(ev.Err), "got %v", ev.Err)

	// Also when the status arrives unstructured, as the dynamic client decodes it.
	go fw.Error(toUnstructuredStatus(t, &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonGone, Message: "gone"}))
	ev = next(t, w)
	require.True(t, apierrors.IsGone(ev.Err), "got %v", ev.Err)

	// An event without an object.
	go fw.Add(nil)
	ev = next(t, w)
	require.Equal(t, watch.Error, ev.Type)
	var convErr *customresource.ConversionError
	require.ErrorAs(t, ev.Err, &convErr)

	// A typed object (from a hand-made fake) is converted, not refused.
	go fw.Modify(podSet("default", "typed", 3))
	ev = next(t, w)
	require.Equal(t, watch.Modified, ev.Type)
	require.Equal(t, "typed", ev.Object.Name)

	// A bookmark carries only a resourceVersion.
	bookmark := toUnstructured(t, &v1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "99"}})
	go fw.Action(watch.Bookmark, bookmark)
	ev = next(t, w)
	require.Equal(t, watch.Bookmark, ev.Type)
	require.Equal(t, "99", ev.Object.ResourceVersion)
}

func toUnstructuredStatus(t *testing.T, s *metav1.Status) runtime.Object {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	require.NoError(t, err)
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("v1")
	u.SetKind("Status")
	return u
}

func TestWatchEndsWhenTheUnderlyingWatchEnds(t *testing.T) {
	w, fw := fakeWatch(t)
	fw.Stop()
	requireClosed(t, w)
	w.Stop() // after the end: returns at once
}

func TestWatchStopsWithUnreadEvents(t *testing.T) {
	w, fw := fakeWatch(t)
	// The converter is blocked handing this event to a reader that never comes.
	sent := make(chan struct{})
	go func() {
		fw.Add(toUnstructured(t, podSet("default", "unread", 1)))
		close(sent)
	}()
	<-sent
	w.Stop()
	require.True(t, fw.IsStopped(), "Stop stops the underlying watch")
	requireClosed(t, w)
}

func TestWatchStopIsIdempotentAndConcurrent(t *testing.T) {
	w, fw := fakeWatch(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(w.Stop)
	}
	wg.Wait()
	require.True(t, fw.IsStopped())
	w.Stop()
}

func TestWatchEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	dyn := newFake(t)
	// Emulate the real dynamic client, whose watch ends when its request context does.
	dyn.PrependWatchReactor("podsets", func(a clienttesting.Action) (bool, watch.Interface, error) {
		fw := watch.NewFake()
		go func() {
			<-ctx.Done()
			fw.Stop()
		}()
		return true, fw, nil
	})
	w, err := newClient(t, dyn).Watch(ctx, "", metav1.ListOptions{})
	require.NoError(t, err)
	cancel()
	requireClosed(t, w)
	w.Stop()
}

func TestWatchFailsToStart(t *testing.T) {
	dyn := newFake(t)
	dyn.PrependWatchReactor("podsets", func(clienttesting.Action) (bool, watch.Interface, error) {
		return true, nil, apierrors.NewForbidden(v1alpha1.Resource("podsets"), "", nil)
	})
	_, err := newClient(t, dyn).Watch(context.Background(), "", metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err))
}
