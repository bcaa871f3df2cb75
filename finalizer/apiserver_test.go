package finalizer_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	kworkqueue "k8s.io/client-go/util/workqueue"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/finalizer"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// apiWait bounds every wait on the server; generous, since the machine may be loaded.
const apiWait = 30 * time.Second

// Add and Remove on a real API server: the merge patch with a resourceVersion is a precondition
// there (409 on a stale copy), and the names ValidateName refuses are those the server refuses.
func TestPatchesAPIServer(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ctx, ns := env.Context(), env.Namespace()
	cms := env.Client().CoreV1().ConfigMaps(ns)
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "patches"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	added, err := finalizer.Add(ctx, cms, cm, cleanup, other)
	require.NoError(t, err)
	assert.Equal(t, []string{cleanup, other}, added.Finalizers)

	// A stale copy conflicts, for Add and Remove alike, and nothing is written.
	_, err = finalizer.Add(ctx, cms, cm, "example.com/late")
	assert.True(t, apierrors.IsConflict(err), "got %v", err)
	stale := added.DeepCopy()
	relabelled := added.DeepCopy()
	relabelled.Labels = map[string]string{"changed": "yes"}
	_, err = cms.Update(ctx, relabelled, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = finalizer.Remove(ctx, cms, stale, cleanup)
	assert.True(t, apierrors.IsConflict(err), "got %v", err)
	got, err := cms.Get(ctx, "patches", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{cleanup, other}, got.Finalizers)

	// The server refuses on a built-in type what ValidateName refuses.
	for _, bad := range []string{"cleanup", "Example.com/x"} {
		require.ErrorIs(t, finalizer.ValidateName(bad), finalizer.ErrInvalidName)
		_, err := cms.Patch(ctx, "patches", types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"finalizers":[%q]}}`, bad), metav1.PatchOptions{})
		assert.True(t, apierrors.IsInvalid(err), "%q: the server accepted it (%v)", bad, err)
	}

	// Deleting: the object stays while finalizers remain, and no finalizer may be added.
	require.NoError(t, cms.Delete(ctx, "patches", metav1.DeleteOptions{}))
	got, err = cms.Get(ctx, "patches", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, got.DeletionTimestamp)
	_, err = finalizer.Add(ctx, cms, got, "example.com/late")
	require.ErrorIs(t, err, finalizer.ErrBeingDeleted)
	_, err = cms.Patch(ctx, "patches", types.MergePatchType, []byte(`{"metadata":{"finalizers":["example.com/cleanup","other.example.com/keep","example.com/late"]}}`), metav1.PatchOptions{})
	assert.True(t, apierrors.IsInvalid(err) || apierrors.IsForbidden(err), "the server refuses it too: %v", err)

	got, err = finalizer.Remove(ctx, cms, got, cleanup)
	require.NoError(t, err)
	assert.Equal(t, []string{other}, got.Finalizers)
	_, err = finalizer.Remove(ctx, cms, got, other)
	require.NoError(t, err)
	waitGone(t, env, "patches")
}

// external is the system the finalizers clean up after: what the controller created for each
// ConfigMap, the cleanups that ran, and failures to inject.
type external struct {
	mu       sync.Mutex
	created  map[string]bool
	cleanups []string       // "finalizer key", in the order they ran and succeeded
	attempts map[string]int // per "finalizer key"
	failures map[string]int // per finalizer: how many more attempts fail
}

func newExternal() *external {
	return &external{created: map[string]bool{}, attempts: map[string]int{}, failures: map[string]int{}}
}

func (x *external) fn(name string) finalizer.Func[*corev1.ConfigMap] {
	return func(_ context.Context, cm *corev1.ConfigMap) error {
		x.mu.Lock()
		defer x.mu.Unlock()
		id := name + " " + cm.Namespace + "/" + cm.Name
		x.attempts[id]++
		if x.failures[name] > 0 {
			x.failures[name]--
			return fmt.Errorf("the external system is down")
		}
		x.cleanups = append(x.cleanups, id)
		delete(x.created, cm.Namespace+"/"+cm.Name)
		return nil
	}
}

func (x *external) fail(name string, times int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.failures[name] = times
}

func (x *external) snapshot() (cleanups []string, attempts map[string]int, created map[string]bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return slices.Clone(x.cleanups), maps.Clone(x.attempts), maps.Clone(x.created)
}

// startFinalizing runs a controller on env whose Reconcile calls Finalize first and otherwise
// "creates" the ConfigMap in the external system; the registry has the finalizers names, in
// that order, and records events through a broadcaster to the API server.
func startFinalizing(t *testing.T, env *testkit.Env, x *external, names ...string) {
	t.Helper()
	ns := env.Namespace()
	cms, err := informer.For[*corev1.ConfigMap](env.Factory())
	require.NoError(t, err)

	events := record.NewBroadcaster()
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: env.Client().CoreV1().Events("")})
	t.Cleanup(events.Shutdown)
	fins := finalizer.New[*corev1.ConfigMap](finalizer.WithEventRecorder(
		events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "finalizer-test"})))
	for _, n := range names {
		require.NoError(t, fins.Register(n, x.fn(n)))
	}

	r := controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
		cm, err := cms.Lister().Get(key.Namespace, key.Name)
		if apierrors.IsNotFound(err) {
			return controller.Result{}, nil
		}
		if err != nil {
			return controller.Result{}, err
		}
		cm, res, err := fins.Finalize(ctx, env.Client().CoreV1().ConfigMaps(key.Namespace), cm)
		if err != nil || res.Deleting {
			return controller.Result{}, err
		}
		x.mu.Lock()
		x.created[key.Namespace+"/"+cm.Name] = true
		x.mu.Unlock()
		return controller.Result{}, nil
	})
	c, err := controller.New("finalizing", r, controller.Options[controller.Key]{
		Workers:     2,
		RateLimiter: kworkqueue.NewTypedItemExponentialFailureRateLimiter[controller.Key](5*time.Millisecond, 200*time.Millisecond),
		Retry:       controller.BackoffForever(),
	})
	require.NoError(t, err)
	// Only this test's namespace: the server is shared with other tests.
	require.NoError(t, controller.Watch(c, cms, func(cm *corev1.ConfigMap) []controller.Key {
		if cm.Namespace != ns {
			return nil
		}
		return controller.EnqueueObject(cm)
	}))
	env.RunController(env.Context(), c)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, apiWait, 20*time.Millisecond, what)
}

func waitGone(t *testing.T, env *testkit.Env, name string) {
	t.Helper()
	waitFor(t, name+" is gone", func() bool {
		_, err := env.Client().CoreV1().ConfigMaps(env.Namespace()).Get(env.Context(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

func createConfigMap(t *testing.T, env *testkit.Env, name string) {
	t.Helper()
	_, err := env.Client().CoreV1().ConfigMaps(env.Namespace()).Create(env.Context(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func deleteConfigMap(t *testing.T, env *testkit.Env, name string) {
	t.Helper()
	require.NoError(t, env.Client().CoreV1().ConfigMaps(env.Namespace()).Delete(env.Context(), name, metav1.DeleteOptions{}))
}

// waitFinalizers waits until the server's copy of name carries exactly want.
func waitFinalizers(t *testing.T, env *testkit.Env, name string, want ...string) *corev1.ConfigMap {
	t.Helper()
	var got *corev1.ConfigMap
	waitFor(t, fmt.Sprintf("%s carries %v", name, want), func() bool {
		cm, err := env.Client().CoreV1().ConfigMaps(env.Namespace()).Get(env.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		got = cm
		return slices.Equal(cm.Finalizers, want)
	})
	return got
}

// A controller with a finalizer on a real API server: created objects get the finalizer, a
// delete runs the cleanup exactly once and the object goes; a failing cleanup keeps the object
// (deletionTimestamp set, finalizer present), is retried with a Warning event on the object, and
// once it succeeds the object goes.
func TestControllerAPIServer(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	x := newExternal()
	startFinalizing(t, env, x, cleanup)
	ns := env.Namespace()

	createConfigMap(t, env, "ok")
	waitFinalizers(t, env, "ok", cleanup)
	waitFor(t, "the external resource exists", func() bool { _, _, c := x.snapshot(); return c[ns+"/ok"] })
	deleteConfigMap(t, env, "ok")
	waitGone(t, env, "ok")
	require.NoError(t, env.QuietContext(env.Context(), apiWait, testkit.DefaultQuietPeriod))
	cleanups, attempts, created := x.snapshot()
	assert.Equal(t, []string{cleanup + " " + ns + "/ok"}, cleanups)
	assert.Equal(t, 1, attempts[cleanup+" "+ns+"/ok"], "the cleanup ran exactly once")
	assert.False(t, created[ns+"/ok"], "cleaned up")

	// The external system is down: the object stays and the cleanup is retried.
	x.fail(cleanup, 1<<30)
	createConfigMap(t, env, "failing")
	waitFinalizers(t, env, "failing", cleanup)
	deleteConfigMap(t, env, "failing")
	id := cleanup + " " + ns + "/failing"
	waitFor(t, "the failing cleanup is retried", func() bool { _, a, _ := x.snapshot(); return a[id] > 2 })
	cm := waitFinalizers(t, env, "failing", cleanup)
	assert.NotNil(t, cm.DeletionTimestamp, "being deleted, held by the finalizer")
	waitFor(t, "a Warning event names the finalizer", func() bool {
		list, err := env.Client().CoreV1().Events(ns).List(env.Context(), metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.name": "failing", "reason": finalizer.ReasonFinalizeFailed}.String(),
		})
		if err != nil || len(list.Items) == 0 {
			return false
		}
		ev := list.Items[0]
		return ev.Type == corev1.EventTypeWarning && ev.InvolvedObject.UID == cm.UID &&
			ev.Message == "finalizer "+cleanup+" failed: the external system is down"
	})

	// It comes back: the next retry succeeds and the object goes.
	x.fail(cleanup, 0)
	waitGone(t, env, "failing")
	require.NoError(t, env.QuietContext(env.Context(), apiWait, testkit.DefaultQuietPeriod))
	cleanups, attempts, _ = x.snapshot()
	assert.Equal(t, []string{cleanup + " " + ns + "/ok", id}, cleanups, "the cleanup succeeded once")
	t.Logf("the failing cleanup was attempted %d times", attempts[id])
}

// Two finalizers run in registration order, each exactly once, even though removing the first
// makes the informer deliver an update (a copy with the second still on it) while the second
// runs; a failure of the second does not repeat the first.
func TestControllerOrderAPIServer(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	x := newExternal()
	const first, second = "example.com/first", "example.com/second"
	startFinalizing(t, env, x, first, second)
	ns := env.Namespace()

	names := []string{"one", "two", "three"}
	for _, n := range names {
		createConfigMap(t, env, n)
	}
	for _, n := range names {
		waitFinalizers(t, env, n, first, second)
	}
	for _, n := range names {
		deleteConfigMap(t, env, n)
	}
	for _, n := range names {
		waitGone(t, env, n)
	}
	require.NoError(t, env.QuietContext(env.Context(), apiWait, testkit.DefaultQuietPeriod))
	cleanups, attempts, _ := x.snapshot()
	for _, n := range names {
		i, j := slices.Index(cleanups, first+" "+ns+"/"+n), slices.Index(cleanups, second+" "+ns+"/"+n)
		require.True(t, i >= 0 && j >= 0, "both cleanups of %s ran: %v", n, cleanups)
		assert.Less(t, i, j, "%s: first before second", n)
		assert.Equal(t, 1, attempts[first+" "+ns+"/"+n], "%s: first ran once", n)
		assert.Equal(t, 1, attempts[second+" "+ns+"/"+n], "%s: second ran once", n)
	}

	// The second fails a few times: the first is removed at once and not repeated.
	x.fail(second, 3)
	createConfigMap(t, env, "four")
	waitFinalizers(t, env, "four", first, second)
	deleteConfigMap(t, env, "four")
	waitGone(t, env, "four")
	require.NoError(t, env.QuietContext(env.Context(), apiWait, testkit.DefaultQuietPeriod))
	_, attempts, _ = x.snapshot()
	assert.Equal(t, 1, attempts[first+" "+ns+"/four"], "first ran once")
	assert.Equal(t, 4, attempts[second+" "+ns+"/four"], "second failed three times, then succeeded")
}
