package finalizer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/finalizer"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// journal records which finalize functions ran, in order.
type journal struct {
	mu   sync.Mutex
	runs []string
}

func (j *journal) fn(name string, fail *int) finalizer.Func[*corev1.ConfigMap] {
	return func(_ context.Context, cm *corev1.ConfigMap) error {
		j.mu.Lock()
		defer j.mu.Unlock()
		j.runs = append(j.runs, name+" "+cm.Name)
		if fail != nil && *fail > 0 {
			*fail--
			return fmt.Errorf("%s: external system unavailable", name)
		}
		return nil
	}
}

func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.runs)
}

func deleting(name string, finalizers ...string) *corev1.ConfigMap {
	cm := configMap(name, finalizers...)
	now := metav1.Now()
	cm.DeletionTimestamp = &now
	return cm
}

func TestRegister(t *testing.T) {
	f := finalizer.New[*corev1.ConfigMap]()
	noop := func(context.Context, *corev1.ConfigMap) error { return nil }
	require.NoError(t, f.Register("example.com/b", noop))
	require.NoError(t, f.Register("example.com/a", noop))
	assert.ErrorIs(t, f.Register("example.com/b", noop), finalizer.ErrAlreadyRegistered)
	err := f.Register("cleanup", noop)
	assert.ErrorIs(t, err, finalizer.ErrInvalidName)
	assert.ErrorIs(t, f.Register("example.com/c", nil), finalizer.ErrInvalidInput)
	assert.ErrorContains(t, f.Register("example.com/c", nil), "nil finalize function")
	assert.Equal(t, []string{"example.com/b", "example.com/a"}, f.Names(), "registration order")

	var zero finalizer.Finalizers[*corev1.ConfigMap]
	require.NoError(t, zero.Register(cleanup, noop), "the zero value is ready to use")
	var nilF *finalizer.Finalizers[*corev1.ConfigMap]
	assert.Error(t, nilF.Register(cleanup, noop))
	assert.Nil(t, nilF.Names())
	_, _, err = nilF.Finalize(context.Background(), finalizer.PatcherFunc[*corev1.ConfigMap](nil), configMap("a"))
	assert.Error(t, err)
}

// A live object gets every missing registered finalizer in one patch; then nothing is sent.
func TestFinalizeAddsMissing(t *testing.T) {
	env := testkit.NewFake(t, configMap("a", other, "example.com/second"))
	ctx := env.Context()
	cms := env.Client().CoreV1().ConfigMaps(metav1.NamespaceDefault)
	var j journal
	f := finalizer.New[*corev1.ConfigMap]()
	require.NoError(t, f.Register("example.com/first", j.fn("first", nil)))
	require.NoError(t, f.Register("example.com/second", j.fn("second", nil)))
	cm, err := cms.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	env.ClearActions()

	out, res, err := f.Finalize(ctx, cms, cm)
	require.NoError(t, err)
	assert.Equal(t, finalizer.Result{Updated: true}, res)
	assert.Equal(t, []string{other, "example.com/second", "example.com/first"}, out.Finalizers)
	assert.Equal(t, 1, patches(env))

	again, res, err := f.Finalize(ctx, cms, out)
	require.NoError(t, err)
	assert.Equal(t, finalizer.Result{}, res)
	assert.Same(t, out, again)
	assert.Equal(t, 1, patches(env), "all present: no request")
	assert.Empty(t, j.list(), "no function runs on a live object")

	// A registry without finalizers does nothing.
	_, res, err = finalizer.New[*corev1.ConfigMap]().Finalize(ctx, cms, configMap("unread"))
	require.NoError(t, err)
	assert.Equal(t, finalizer.Result{}, res)
}

// An object being deleted: the functions of the registered finalizers on it run in registration
// order, each finalizer removed by a patch of its own after its function succeeded; finalizers
// of others stay, registered finalizers the object lacks are skipped.
func TestFinalizeRunsInOrder(t *testing.T) {
	// The fake keeps a seeded deletionTimestamp and never deletes: enough to watch the patches.
	env := testkit.NewFake(t, deleting("a", "example.com/second", other, "example.com/first"))
	ctx := env.Context()
	cms := env.Client().CoreV1().ConfigMaps(metav1.NamespaceDefault)
	var j journal
	f := finalizer.New[*corev1.ConfigMap]()
	require.NoError(t, f.Register("example.com/first", j.fn("first", nil)))
	require.NoError(t, f.Register("example.com/absent", j.fn("absent", nil)))
	require.NoError(t, f.Register("example.com/second", j.fn("second", nil)))
	cm, err := cms.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	env.ClearActions()

	out, res, err := f.Finalize(ctx, cms, cm)
	require.NoError(t, err)
	assert.Equal(t, finalizer.Result{Updated: true, Deleting: true, Finalized: true}, res)
	assert.Equal(t, []string{"first a", "second a"}, j.list(), "registration order, not the object's; absent skipped")
	assert.Equal(t, []string{other}, out.Finalizers, "another controller's finalizer stays")
	assert.Equal(t, 2, patches(env), "one patch per finalizer removed")

	_, res, err = f.Finalize(ctx, cms, out)
	require.NoError(t, err)
	assert.Equal(t, finalizer.Result{Deleting: true, Finalized: true}, res)
	assert.Len(t, j.list(), 2, "nothing runs twice")
	assert.Equal(t, 2, patches(env))
}

// A failing function stops Finalize: its finalizer stays, later ones do not run, the error
// names the finalizer and wraps the cause, and a Warning event is recorded. Cleanups that
// succeeded before it are removed and do not run again on the retry.
func TestFinalizeFailure(t *testing.T) {
	env := testkit.NewFake(t, deleting("a", "example.com/first", "example.com/second", "example.com/third"))
	ctx := env.Context()
	cms := env.Client().CoreV1().ConfigMaps(metav1.NamespaceDefault)
	var j journal
	recorder := record.NewFakeRecorder(10)
	f := finalizer.New[*corev1.ConfigMap](finalizer.WithEventRecorder(recorder))
	failures := 2
	require.NoError(t, f.Register("example.com/first", j.fn("first", nil)))
	require.NoError(t, f.Register("example.com/second", j.fn("second", &failures)))
	require.NoError(t, f.Register("example.com/third", j.fn("third", nil)))

	cm, err := cms.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	for attempt := 1; attempt <= 2; attempt++ {
		var res finalizer.Result
		cm, res, err = f.Finalize(ctx, cms, cm)
		require.Error(t, err, "attempt %d", attempt)
		var fe *finalizer.FinalizeError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, "example.com/second", fe.Finalizer)
		assert.Equal(t, "default/a", fe.Object)
		assert.ErrorContains(t, err, "external system unavailable")
		assert.Equal(t, finalizer.Result{Updated: attempt == 1, Deleting: true}, res, "attempt %d", attempt)
		assert.Equal(t, []string{"example.com/second", "example.com/third"}, cm.Finalizers, "the failed finalizer and those after it stay")
		select {
		case ev := <-recorder.Events:
			assert.Equal(t, "Warning FinalizeFailed finalizer example.com/second failed: second: external system unavailable", ev)
		default:
			t.Fatalf("attempt %d: no event recorded", attempt)
		}
	}
	stored, err := cms.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"example.com/second", "example.com/third"}, stored.Finalizers)

	out, res, err := f.Finalize(ctx, cms, cm)
	require.NoError(t, err)
	assert.Equal(t, finalizer.Result{Updated: true, Deleting: true, Finalized: true}, res)
	assert.Empty(t, out.Finalizers)
	assert.Equal(t, []string{"first a", "second a", "second a", "second a", "third a"}, j.list(), "first ran once; second until it succeeded")
	assert.Empty(t, recorder.Events, "no event on success")
}

// Errors of the patches are returned for the controller to retry: a Conflict, NotFound (the
// object is gone, or the patcher addresses another namespace: the retry's lister read tells),
// anything else.
func TestFinalizePatchErrors(t *testing.T) {
	ctx := context.Background()
	gr := schema.GroupResource{Resource: "configmaps"}
	answer := func(err error) finalizer.PatcherFunc[*corev1.ConfigMap] {
		return func(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*corev1.ConfigMap, error) {
			return nil, err
		}
	}
	var j journal
	f := finalizer.New[*corev1.ConfigMap]()
	require.NoError(t, f.Register(cleanup, j.fn("cleanup", nil)))
	cm := deleting("a", cleanup)
	cm.ResourceVersion = "7"

	_, res, err := f.Finalize(ctx, answer(apierrors.NewConflict(gr, "a", errors.New("stale"))), cm)
	assert.True(t, apierrors.IsConflict(err), "got %v", err)
	assert.Equal(t, finalizer.Result{Deleting: true}, res)

	out, res, err := f.Finalize(ctx, answer(apierrors.NewNotFound(gr, "a")), cm)
	assert.True(t, apierrors.IsNotFound(err), "got %v", err)
	assert.Contains(t, err.Error(), "default/a")
	assert.Equal(t, finalizer.Result{Deleting: true}, res, "not finalized: the finalizer was not removed")
	assert.Same(t, cm, out)

	live := configMap("b")
	live.ResourceVersion = "8"
	_, res, err = f.Finalize(ctx, answer(apierrors.NewNotFound(gr, "b")), live)
	assert.True(t, apierrors.IsNotFound(err), "got %v", err)
	assert.Equal(t, finalizer.Result{}, res)

	_, _, err = f.Finalize(ctx, answer(apierrors.NewInternalError(errors.New("boom"))), live)
	assert.True(t, apierrors.IsInternalError(err), "got %v", err)

	_, _, err = f.Finalize(ctx, nil, cm)
	assert.ErrorIs(t, err, finalizer.ErrInvalidInput)
	assert.ErrorContains(t, err, "nil patcher")
	_, _, err = f.Finalize(ctx, answer(nil), nil)
	assert.ErrorIs(t, err, finalizer.ErrInvalidInput)
	assert.ErrorContains(t, err, "nil object")
	assert.Equal(t, []string{"cleanup a", "cleanup a"}, j.list())

	// A typed nil recorder is no recorder, not a panic.
	var nilRecorder *record.FakeRecorder
	g := finalizer.New[*corev1.ConfigMap](finalizer.WithEventRecorder(nilRecorder), nil)
	require.NoError(t, g.Register(cleanup, func(context.Context, *corev1.ConfigMap) error { return errors.New("down") }))
	_, _, err = g.Finalize(ctx, answer(nil), cm)
	assert.ErrorContains(t, err, "down")
}

// Register may run while Finalize does (under -race).
func TestRegisterWhileFinalizing(t *testing.T) {
	f := finalizer.New[*corev1.ConfigMap]()
	noop := func(context.Context, *corev1.ConfigMap) error { return nil }
	ok := finalizer.PatcherFunc[*corev1.ConfigMap](func(_ context.Context, _ string, _ types.PatchType, _ []byte, _ metav1.PatchOptions, _ ...string) (*corev1.ConfigMap, error) {
		return configMap("a"), nil
	})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 50 {
			assert.NoError(t, f.Register(fmt.Sprintf("example.com/f%d", i), noop))
		}
	})
	wg.Go(func() {
		deadline := time.Now().Add(5 * time.Second)
		for len(f.Names()) < 50 && time.Now().Before(deadline) {
			cm := configMap("a")
			cm.ResourceVersion = "1"
			_, _, err := f.Finalize(context.Background(), ok, cm)
			assert.NoError(t, err)
		}
	})
	wg.Wait()
	assert.Len(t, f.Names(), 50)
}

// A cached copy that still shows a finalizer the registry removed (the informer has not seen
// the removal yet) does not run that cleanup again; after RemovalMemory it is forgotten.
func TestFinalizeSkipsStaleCopies(t *testing.T) {
	env := testkit.NewFake(t, deleting("a", "example.com/first", "example.com/second"))
	ctx := env.Context()
	cms := env.Client().CoreV1().ConfigMaps(metav1.NamespaceDefault)
	var j journal
	clk := clocktesting.NewFakePassiveClock(time.Now())
	f := finalizer.New[*corev1.ConfigMap](finalizer.WithClock(clk))
	require.NoError(t, f.Register("example.com/first", j.fn("first", nil)))
	require.NoError(t, f.Register("example.com/second", j.fn("second", nil)))
	original, err := cms.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)

	_, res, err := f.Finalize(ctx, cms, original)
	require.NoError(t, err)
	require.True(t, res.Finalized)
	require.Equal(t, []string{"first a", "second a"}, j.list())
	env.ClearActions()

	// What a lagging cache may hand the next Reconcile: the copy before both removals, and the
	// one between them (first removed, second not yet).
	between := original.DeepCopy()
	between.Finalizers = []string{"example.com/second"}
	for _, stale := range []*corev1.ConfigMap{original, between} {
		out, res, err := f.Finalize(ctx, cms, stale)
		require.NoError(t, err)
		assert.Equal(t, finalizer.Result{Deleting: true}, res, "nothing done, not finalized yet as far as this copy shows")
		assert.Same(t, stale, out)
	}
	// Even a copy from before the deletion: it must not look alive (the Reconcile would
	// recreate what the cleanups removed).
	alive := original.DeepCopy()
	alive.DeletionTimestamp = nil
	_, res, err = f.Finalize(ctx, cms, alive)
	require.NoError(t, err)
	assert.Equal(t, finalizer.Result{Deleting: true}, res)
	assert.Equal(t, []string{"first a", "second a"}, j.list(), "no cleanup ran twice")
	assert.Zero(t, patches(env))

	// Another object is not affected by the memory.
	b := deleting("b", "example.com/first")
	b.UID = "another-uid"
	b.ResourceVersion = "1"
	recording := finalizer.PatcherFunc[*corev1.ConfigMap](func(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*corev1.ConfigMap, error) {
		return deleting("b"), nil
	})
	_, res, err = f.Finalize(ctx, recording, b)
	require.NoError(t, err)
	assert.True(t, res.Finalized)
	assert.Equal(t, []string{"first a", "second a", "first b"}, j.list())

	// Past RemovalMemory the record is gone (the cache had ample time to catch up).
	clk.SetTime(clk.Now().Add(finalizer.RemovalMemory))
	_, _, err = f.Finalize(ctx, cms, between)
	// The server already deleted the object (its last finalizer went), as an API server does.
	assert.True(t, apierrors.IsNotFound(err), "the copy is stale on the server too; got %v", err)
	assert.Equal(t, []string{"first a", "second a", "first b", "second a"}, j.list(), "forgotten: the function ran")
}
