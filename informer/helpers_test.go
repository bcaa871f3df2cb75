package informer

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// newClient returns a fake clientset that stamps a fresh resourceVersion on
// every create and update, as the API server does. Without it the fake keeps
// the caller's resourceVersion and client-go treats updates as resyncs.
func newClient(objs ...runtime.Object) *fake.Clientset {
	var rv atomic.Int64
	rv.Store(100)
	for _, o := range objs {
		if m, err := meta.Accessor(o); err == nil && m.GetResourceVersion() == "" {
			m.SetResourceVersion(strconv.FormatInt(rv.Add(1), 10))
		}
	}
	c := fake.NewClientset(objs...)
	c.PrependReactor("*", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		var obj runtime.Object
		switch a := action.(type) {
		case k8stesting.CreateAction:
			obj = a.GetObject()
		case k8stesting.UpdateAction:
			obj = a.GetObject()
		default:
			return false, nil, nil
		}
		if m, err := meta.Accessor(obj); err == nil {
			m.SetResourceVersion(strconv.FormatInt(rv.Add(1), 10))
		}
		return false, nil, nil
	})
	return c
}

// errorSink records what a Factory (handle) or a mutation detector (add) reports.
type errorSink struct {
	mu   sync.Mutex
	errs []error
}

func (s *errorSink) handle(_ context.Context, err error) { s.add(err) }

func (s *errorSink) add(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, err)
}

func (s *errorSink) all() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.errs...)
}

// recorder is a queue that records what was added, in order.
type recorder[K comparable] struct {
	mu    sync.Mutex
	items []K
}

func (r *recorder[K]) Add(k K) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items = append(r.items, k)
}

func (r *recorder[K]) got() []K {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]K(nil), r.items...)
}

func (r *recorder[K]) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items = nil
}

// startFactory starts f, waits for its caches and registers Shutdown.
func startFactory(t *testing.T, f *Factory) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx)
	t.Cleanup(func() {
		cancel()
		f.Shutdown()
	})
	syncCtx, syncCancel := context.WithTimeout(ctx, 10*time.Second)
	defer syncCancel()
	require.NoError(t, f.WaitForCacheSync(syncCtx))
}

func pod(ns, name string, labels map[string]string, owners ...metav1.OwnerReference) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: name, Labels: labels, OwnerReferences: owners,
		UID: types.UID("uid-" + ns + "-" + name),
	}}
}

func controllerRef(apiVersion, kind, name, uid string) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: &yes}
}

// event is one typed handler call, flattened for comparison.
type event struct {
	op        string
	key       string
	initial   bool
	tombstone bool
	missing   bool
	// outOfScope: a delete of an object whose namespace left the scope.
	outOfScope bool
}

// eventLog is a Handler[T] that sends every call to a channel.
type eventLog[T Object] struct{ ch chan event }

func newEventLog[T Object]() *eventLog[T] { return &eventLog[T]{ch: make(chan event, 1000)} }

func (l *eventLog[T]) HandleAdd(obj T, initial bool) {
	l.ch <- event{op: "add", key: objectKey(obj), initial: initial}
}

func (l *eventLog[T]) HandleUpdate(_, newObj T) {
	l.ch <- event{op: "update", key: objectKey(newObj)}
}

func (l *eventLog[T]) HandleDelete(obj T, info DeleteInfo) {
	l.ch <- event{op: "delete", key: objectKey(obj), tombstone: info.FinalStateUnknown, missing: info.ObjectMissing, outOfScope: info.OutOfScope}
}

// next waits for the next event.
func (l *eventLog[T]) next(t *testing.T) event {
	t.Helper()
	select {
	case e := <-l.ch:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
		return event{}
	}
}
