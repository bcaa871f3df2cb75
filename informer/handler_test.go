package informer

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// The adapter is the boundary between client-go's untyped events and
// Handler[T]. Drive it with every shape client-go (or a confused caller)
// can deliver.
func TestAdapterUnwrapsTombstones(t *testing.T) {
	p := pod("a", "p", nil)
	type deleteCall struct {
		obj  *corev1.Pod
		info DeleteInfo
	}
	for _, tc := range []struct {
		name string
		obj  any
		want deleteCall
	}{
		{"direct", p, deleteCall{p, DeleteInfo{Key: "a/p"}}},
		{"tombstone", cache.DeletedFinalStateUnknown{Key: "a/p", Obj: p}, deleteCall{p, DeleteInfo{Key: "a/p", FinalStateUnknown: true}}},
		{"tombstone pointer", &cache.DeletedFinalStateUnknown{Key: "a/p", Obj: p}, deleteCall{p, DeleteInfo{Key: "a/p", FinalStateUnknown: true}}},
		{"tombstone without object", cache.DeletedFinalStateUnknown{Key: "a/p"},
			deleteCall{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p"}}, DeleteInfo{Key: "a/p", FinalStateUnknown: true, ObjectMissing: true}}},
		{"cluster-scoped tombstone without object", cache.DeletedFinalStateUnknown{Key: "p"},
			deleteCall{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, DeleteInfo{Key: "p", FinalStateUnknown: true, ObjectMissing: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []deleteCall
			h := handlerRecorder[*corev1.Pod]{onDelete: func(obj *corev1.Pod, info DeleteInfo) {
				got = append(got, deleteCall{obj, info})
			}}
			sink := &errorSink{}
			a := &adapter[*corev1.Pod]{h: h, name: "pods", report: func(err error) { sink.handle(context.Background(), err) }}
			a.OnDelete(tc.obj)
			require.Empty(t, sink.all())
			require.Equal(t, []deleteCall{tc.want}, got)
		})
	}
}

// Objects of the wrong type, bare or in tombstones, go to the error handler
// and never reach (or crash) the typed handler.
func TestAdapterReportsWrongTypes(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cm"}}
	p := pod("a", "p", nil)
	var calls int
	h := HandlerFuncs[*corev1.Pod]{
		OnAdd:    func(*corev1.Pod, bool) { calls++ },
		OnUpdate: func(_, _ *corev1.Pod) { calls++ },
		OnDelete: func(*corev1.Pod) { calls++ },
	}
	sink := &errorSink{}
	a := &adapter[*corev1.Pod]{h: h, name: "pods", report: func(err error) { sink.handle(context.Background(), err) }}

	require.NotPanics(t, func() {
		a.OnAdd(cm, false)
		a.OnUpdate(cm, p)
		a.OnUpdate(p, cm)
		a.OnDelete(cm)
		a.OnDelete(cache.DeletedFinalStateUnknown{Key: "a/cm", Obj: cm})
		a.OnDelete((*cache.DeletedFinalStateUnknown)(nil))
		a.OnDelete(nil)
		a.OnAdd("not even an object", true)
	})
	assert.Zero(t, calls)
	errs := sink.all()
	require.Len(t, errs, 8)
	for _, err := range errs {
		assert.ErrorIs(t, err, ErrUnexpectedType)
	}
	var typed *UnexpectedTypeError
	require.ErrorAs(t, errs[4], &typed)
	assert.Equal(t, UnexpectedTypeError{Informer: "pods", Want: "*k8s.io/api/core/v1.Pod", Got: "*k8s.io/api/core/v1.ConfigMap", Tombstone: true, Key: "a/cm"}, *typed)
	assert.Equal(t, `informer pods: unexpected object type *k8s.io/api/core/v1.ConfigMap in tombstone for key "a/cm", want *k8s.io/api/core/v1.Pod`, typed.Error())
	require.ErrorAs(t, errs[0], &typed)
	assert.False(t, typed.Tombstone)
	assert.Equal(t, "a/cm", typed.Key)
}

// Through a real informer: an object of the wrong type (here produced by a
// transform) is reported, and the handler and listers carry on.
func TestWrongTypeFromTransformIsReportedNotFatal(t *testing.T) {
	sink := &errorSink{}
	client := newClient(pod("a", "bad", nil), pod("a", "good", nil))
	f := NewFactory(client, Options{
		ErrorHandler: sink.handle,
		ByObject:     []ObjectOverride{ByObject(ObjectOptions[*corev1.Pod]{Transform: func(p *corev1.Pod) (*corev1.Pod, error) { return p, nil }})},
	})
	// Replace the per-type transform with one that emits a foreign type for
	// one object, as a broken custom-resource conversion would.
	f.cfg.transforms[typeOfPod] = func(obj any) (any, error) {
		if p := obj.(*corev1.Pod); p.Name == "bad" {
			return &corev1.ConfigMap{ObjectMeta: p.ObjectMeta}, nil
		}
		return obj, nil
	}
	pods, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	log := newEventLog[*corev1.Pod]()
	_, err = pods.AddHandler(log)
	require.NoError(t, err)
	startFactory(t, f)

	assert.Equal(t, event{op: "add", key: "a/good", initial: true}, log.next(t))
	list, err := pods.Lister().List(nil)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "good", list[0].Name)
	_, err = pods.Lister().Get("a", "bad")
	require.ErrorIs(t, err, ErrUnexpectedType)
	byNS, err := pods.Lister().Namespace("a").List(nil)
	require.NoError(t, err)
	assert.Len(t, byNS, 1)

	require.Eventually(t, func() bool { return len(sink.all()) >= 1 }, 10*time.Second, 10*time.Millisecond)
	for _, err := range sink.all() {
		assert.ErrorIs(t, err, ErrUnexpectedType)
		assert.Contains(t, err.Error(), `"a/bad"`)
	}
}

// A delete the informer missed (its watch broke) is found on relist and
// reaches OnDelete typed, marked as a tombstone.
func TestTombstoneFromRelistReachesOnDelete(t *testing.T) {
	ctx := context.Background()
	client := newClient(pod("a", "doomed", nil), pod("a", "survivor", nil))
	// The first watch is one the test controls; later ones are the fake's.
	firstWatch := watch.NewRaceFreeFake()
	var watches int
	client.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
		watches++
		if watches == 1 {
			return true, firstWatch, nil
		}
		return false, nil, nil
	})

	f := NewFactory(client, Options{})
	pods, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	deleted := make(chan *corev1.Pod, 1)
	var plainDeletes int
	_, err = pods.AddHandler(HandlerFuncs[*corev1.Pod]{
		OnDelete: func(*corev1.Pod) { plainDeletes++ },
		OnDeleteFinalStateUnknown: func(key string, obj *corev1.Pod) {
			assert.Equal(t, "a/doomed", key)
			deleted <- obj
		},
	})
	require.NoError(t, err)
	startFactory(t, f)

	// Delete behind the informer's back: its watch never hears of it.
	require.NoError(t, client.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "a", "doomed"))
	// Expire the watch: the reflector relists and finds the pod gone.
	firstWatch.Error(&apierrors.NewResourceExpired("too old").ErrStatus)

	select {
	case obj := <-deleted:
		assert.Equal(t, "doomed", obj.Name)
		assert.Equal(t, "uid-a-doomed", string(obj.UID), "the last known object, not a skeleton")
	case <-time.After(15 * time.Second):
		t.Fatal("tombstone not delivered")
	}
	_, err = pods.Lister().Get("a", "doomed")
	assert.True(t, apierrors.IsNotFound(err))
	_, err = client.CoreV1().Pods("a").Get(ctx, "survivor", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Zero(t, plainDeletes)
}

func TestHandlerFuncsResync(t *testing.T) {
	old, cur := pod("a", "p", nil), pod("a", "p", nil)
	old.ResourceVersion, cur.ResourceVersion = "7", "7"
	changed := cur.DeepCopy()
	changed.ResourceVersion = "8"
	var updates int
	h := HandlerFuncs[*corev1.Pod]{OnUpdate: func(_, _ *corev1.Pod) { updates++ }, SkipResync: true}
	h.HandleUpdate(old, cur)
	assert.Zero(t, updates)
	h.HandleUpdate(old, changed)
	assert.Equal(t, 1, updates)
	assert.True(t, IsResync(old, cur))
	assert.False(t, IsResync(old, changed))

	h.SkipResync = false
	h.HandleUpdate(old, cur)
	assert.Equal(t, 2, updates)

	var filtered int
	w := withoutResync[*corev1.Pod](HandlerFuncs[*corev1.Pod]{OnUpdate: func(_, _ *corev1.Pod) { filtered++ }})
	w.HandleUpdate(old, cur)
	w.HandleUpdate(old, changed)
	assert.Equal(t, 1, filtered)

	// Nil fields are ignored.
	require.NotPanics(t, func() {
		var empty HandlerFuncs[*corev1.Pod]
		empty.HandleAdd(cur, true)
		empty.HandleUpdate(old, changed)
		empty.HandleDelete(cur, DeleteInfo{Key: "a/p", FinalStateUnknown: true})
	})
}

// A real periodic resync delivers updates with equal resourceVersions.
func TestResyncIsMarked(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a one-second resync")
	}
	f := NewFactory(newClient(pod("a", "p", nil)), Options{Resync: time.Second})
	pods, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	resyncs := make(chan bool, 10)
	var skipped int
	_, err = pods.AddHandler(HandlerFuncs[*corev1.Pod]{OnUpdate: func(old, cur *corev1.Pod) {
		resyncs <- IsResync(old, cur)
	}})
	require.NoError(t, err)
	_, err = pods.AddHandler(HandlerFuncs[*corev1.Pod]{OnUpdate: func(_, _ *corev1.Pod) { skipped++ }, SkipResync: true})
	require.NoError(t, err)
	startFactory(t, f)
	select {
	case isResync := <-resyncs:
		assert.True(t, isResync)
	case <-time.After(10 * time.Second):
		t.Fatal("no resync")
	}
	f.Shutdown()
	assert.Zero(t, skipped)
}

func TestAddHandlerRefusesBrokenHandlers(t *testing.T) {
	f := NewFactory(newClient(), Options{})
	pods, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	_, err = pods.AddHandler(nil)
	require.Error(t, err)
	_, err = pods.AddHandler(EnqueueMapped[*corev1.Pod, string](nil, ownKey[*corev1.Pod]))
	require.ErrorContains(t, err, "nil queue")
	_, err = pods.AddHandler(withoutResync(EnqueueMapped[*corev1.Pod, string](&recorder[string]{}, nil)))
	require.ErrorContains(t, err, "nil key function")

	// After shutdown client-go refuses new handlers; the error says which informer.
	f.Shutdown()
	startAndStop := NewFactory(newClient(), Options{})
	cms, err := For[*corev1.ConfigMap](startAndStop)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	startAndStop.Start(ctx)
	cancel()
	startAndStop.Shutdown()
	_, err = cms.AddHandler(HandlerFuncs[*corev1.ConfigMap]{})
	require.ErrorContains(t, err, "informer configmaps")
}

// handlerRecorder is a Handler whose delete goes to a func.
type handlerRecorder[T Object] struct {
	onDelete func(T, DeleteInfo)
}

func (handlerRecorder[T]) HandleAdd(T, bool)   {}
func (handlerRecorder[T]) HandleUpdate(_, _ T) {}
func (h handlerRecorder[T]) HandleDelete(obj T, info DeleteInfo) {
	h.onDelete(obj, info)
}

var typeOfPod = reflect.TypeFor[*corev1.Pod]()

// Whatever key a tombstone without an object carries, the adapter delivers
// a non-nil skeleton whose key is the tombstone's, and never panics.
func FuzzTombstoneKey(f *testing.F) {
	for _, seed := range []string{"a/p", "p", "", "/", "a/b/c", "ns/", "/name"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, key string) {
		var got *corev1.Pod
		var info DeleteInfo
		a := &adapter[*corev1.Pod]{
			h: handlerRecorder[*corev1.Pod]{onDelete: func(p *corev1.Pod, i DeleteInfo) {
				got, info = p, i
			}},
			name:   "pods",
			report: func(err error) { t.Errorf("reported %v", err) },
		}
		a.OnDelete(cache.DeletedFinalStateUnknown{Key: key})
		if got == nil {
			t.Fatal("no skeleton delivered")
		}
		if info.Key != key || !info.FinalStateUnknown || !info.ObjectMissing {
			t.Fatalf("info %+v for key %q", info, key)
		}
		// The skeleton's namespace and name rebuild the key whenever the
		// key is a well-formed namespace/name or name.
		if name, err := cache.ParseObjectName(key); err == nil && name.Name != "" {
			if rebuilt := objectKey(got); rebuilt != name.String() {
				t.Fatalf("skeleton key %q, tombstone key %q", rebuilt, key)
			}
		}
	})
}
