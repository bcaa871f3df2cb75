package controller_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/finalizer"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit"
)

const (
	cleanupFinalizer = "test.ctrlkit.io/cleanup"
	otherFinalizer   = "other.example.com/keep"
)

// objectCalls records the objects an ObjectReconciler was given.
type objectCalls[T informer.Object] struct {
	got []T
	res controller.Result
	err error
}

func (c *objectCalls[T]) Reconcile(_ context.Context, obj T) (controller.Result, error) {
	c.got = append(c.got, obj)
	return c.res, c.err
}

// configMapsEnv is a fake cluster seeded with objs, its ConfigMap informer synced (so the
// cache has them).
func configMapsEnv(t *testing.T, objs ...runtime.Object) (*testkit.FakeEnv, informer.Informer[*corev1.ConfigMap], client.Client[*corev1.ConfigMap]) {
	t.Helper()
	env := testkit.NewFake(t, objs...)
	cms, err := informer.For[*corev1.ConfigMap](env.Factory())
	require.NoError(t, err)
	c, err := client.For[*corev1.ConfigMap](env.Client())
	require.NoError(t, err)
	env.Sync()
	return env, cms, c
}

func cm(name string, finalizers ...string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Finalizers: finalizers}}
}

// waitCached waits until the cache's copy of key satisfies ok.
func waitCached(t *testing.T, inf informer.Informer[*corev1.ConfigMap], key controller.Key, ok func(*corev1.ConfigMap, error) bool) {
	t.Helper()
	require.Eventually(t, func() bool { return ok(inf.Lister().Get(key.Namespace, key.Name)) }, 10*time.Second, time.Millisecond,
		"the cache never showed the expected %s", key)
}

func deleting(obj *corev1.ConfigMap, err error) bool {
	return err == nil && obj.DeletionTimestamp != nil
}

// The object reconciler gets the cache's own object, and its Result and error come back as
// they are; a key without an object is done, and r is not called.
func TestAsReconcilerPassesTheCachedObject(t *testing.T) {
	env, cms, _ := configMapsEnv(t, cm("a"))
	calls := &objectCalls[*corev1.ConfigMap]{res: controller.Result{RequeueAfter: time.Minute}, err: errors.New("boom")}
	r, err := controller.AsReconciler(cms.Lister(), calls)
	require.NoError(t, err)

	res, err := r.Reconcile(env.Context(), controller.Key{Namespace: "default", Name: "a"})
	assert.Equal(t, controller.Result{RequeueAfter: time.Minute}, res)
	assert.EqualError(t, err, "boom")
	cached, _ := cms.Lister().Get("default", "a")
	require.Len(t, calls.got, 1)
	assert.Same(t, cached, calls.got[0], "no copy")

	res, err = r.Reconcile(env.Context(), controller.Key{Namespace: "default", Name: "gone"})
	require.NoError(t, err)
	assert.Zero(t, res)
	assert.Len(t, calls.got, 1, "not found: not reconciled")
}

// Without finalizers, an object being deleted (another controller's finalizer holds it) is
// not handed to r.
func TestAsReconcilerSkipsDeletingObjects(t *testing.T) {
	env, cms, c := configMapsEnv(t, cm("a", otherFinalizer))
	calls := &objectCalls[*corev1.ConfigMap]{}
	r, err := controller.AsReconciler(cms.Lister(), calls)
	require.NoError(t, err)
	require.NoError(t, c.Delete(env.Context(), "default", "a", metav1.DeleteOptions{}))
	key := controller.Key{Namespace: "default", Name: "a"}
	waitCached(t, cms, key, deleting)

	res, err := r.Reconcile(env.Context(), key)
	require.NoError(t, err)
	assert.Zero(t, res)
	assert.Empty(t, calls.got)
}

// With WithFinalizers: a live object gets the registry's finalizer before r runs, with the
// object the server returned; once it is deleted, the function runs (retried while it fails,
// each failure returned), r is not called, and the object goes.
func TestAsReconcilerWithFinalizers(t *testing.T) {
	env, cms, c := configMapsEnv(t, cm("a", otherFinalizer))
	ctx := env.Context()
	key := controller.Key{Namespace: "default", Name: "a"}
	fails, runs := 1, 0
	fins := finalizer.New[*corev1.ConfigMap]()
	require.NoError(t, fins.Register(cleanupFinalizer, func(_ context.Context, obj *corev1.ConfigMap) error {
		runs++
		if fails > 0 {
			fails--
			return errors.New("the external system is down")
		}
		return nil
	}))
	calls := &objectCalls[*corev1.ConfigMap]{}
	r, err := controller.AsReconciler(cms.Lister(), calls, controller.WithFinalizers(fins, c))
	require.NoError(t, err)

	_, err = r.Reconcile(ctx, key)
	require.NoError(t, err)
	require.Len(t, calls.got, 1)
	assert.Equal(t, []string{otherFinalizer, cleanupFinalizer}, calls.got[0].Finalizers, "added before Reconcile")
	stored, err := c.Get(ctx, "default", "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, stored.ResourceVersion, calls.got[0].ResourceVersion, "r got the server's answer")
	waitCached(t, cms, key, func(obj *corev1.ConfigMap, err error) bool { return err == nil && finalizer.Has(obj, cleanupFinalizer) })

	require.NoError(t, c.Delete(ctx, "default", "a", metav1.DeleteOptions{}))
	waitCached(t, cms, key, deleting)
	_, err = r.Reconcile(ctx, key)
	var fe *finalizer.FinalizeError
	require.ErrorAs(t, err, &fe, "a failed cleanup is the Reconcile's error, for the retry")
	assert.Equal(t, cleanupFinalizer, fe.Finalizer)
	assert.False(t, controller.IsTerminal(err))

	_, err = r.Reconcile(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, 2, runs)
	assert.Len(t, calls.got, 1, "an object being deleted never reaches r")
	stored, err = c.Get(ctx, "default", "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{otherFinalizer}, stored.Finalizers, "another controller's finalizer stays")

	// The cache's copy still shows ours until the removal's event arrives: nothing runs twice.
	_, err = r.Reconcile(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, 2, runs)
}

// A cleanup that returns a Terminal error stays terminal through AsReconciler.
func TestAsReconcilerTerminalFinalizer(t *testing.T) {
	env, cms, c := configMapsEnv(t, cm("a", cleanupFinalizer))
	fins := finalizer.New[*corev1.ConfigMap]()
	require.NoError(t, fins.Register(cleanupFinalizer, func(context.Context, *corev1.ConfigMap) error {
		return controller.Terminal(errors.New("the record is malformed"))
	}))
	r, err := controller.AsReconciler[*corev1.ConfigMap](cms.Lister(), &objectCalls[*corev1.ConfigMap]{}, controller.WithFinalizers(fins, c))
	require.NoError(t, err)
	require.NoError(t, c.Delete(env.Context(), "default", "a", metav1.DeleteOptions{}))
	key := controller.Key{Namespace: "default", Name: "a"}
	waitCached(t, cms, key, deleting)

	_, err = r.Reconcile(env.Context(), key)
	assert.True(t, controller.IsTerminal(err), "got %v", err)
	assert.ErrorContains(t, err, "the record is malformed")
}

// stubLister answers Get with err.
type stubLister struct {
	informer.Lister[*corev1.ConfigMap]
	err error
}

func (s stubLister) Get(string, string) (*corev1.ConfigMap, error) { return nil, s.err }

// A lister error is returned for the retry, except an object of the wrong type, which only a
// new version can fix: Terminal.
func TestAsReconcilerListerErrors(t *testing.T) {
	ctx := context.Background()
	calls := &objectCalls[*corev1.ConfigMap]{}
	unexpected := &informer.UnexpectedTypeError{Informer: "configmaps", Want: "*v1.ConfigMap", Got: "*unstructured.Unstructured"}
	r, err := controller.AsReconciler[*corev1.ConfigMap](stubLister{err: unexpected}, calls)
	require.NoError(t, err)
	_, err = r.Reconcile(ctx, controller.Key{Namespace: "default", Name: "a"})
	assert.True(t, controller.IsTerminal(err), "got %v", err)
	assert.ErrorIs(t, err, informer.ErrUnexpectedType)

	internal := apierrors.NewInternalError(errors.New("index broken"))
	r, err = controller.AsReconciler[*corev1.ConfigMap](stubLister{err: internal}, calls)
	require.NoError(t, err)
	_, err = r.Reconcile(ctx, controller.Key{Namespace: "default", Name: "a"})
	assert.Same(t, internal, err)
	assert.False(t, controller.IsTerminal(err))

	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "a")
	r, err = controller.AsReconciler[*corev1.ConfigMap](stubLister{err: notFound}, calls)
	require.NoError(t, err)
	_, err = r.Reconcile(ctx, controller.Key{Name: "a"})
	require.NoError(t, err)
	assert.Empty(t, calls.got)
}

// Bad arguments are errors matching ErrInvalidOptions that say which.
func TestAsReconcilerOptions(t *testing.T) {
	_, cms, c := configMapsEnv(t)
	calls := &objectCalls[*corev1.ConfigMap]{}
	fins := finalizer.New[*corev1.ConfigMap]()
	var nilClient client.Client[*corev1.ConfigMap]
	var nilFunc controller.ObjectReconcilerFunc[*corev1.ConfigMap]
	for _, tc := range []struct {
		want  string
		build func() (controller.Reconciler[controller.Key], error)
	}{
		{"invalid AsReconciler: nil lister", func() (controller.Reconciler[controller.Key], error) {
			return controller.AsReconciler[*corev1.ConfigMap](nil, calls)
		}},
		{"invalid AsReconciler: nil ObjectReconciler", func() (controller.Reconciler[controller.Key], error) {
			return controller.AsReconciler(cms.Lister(), controller.ObjectReconciler[*corev1.ConfigMap](nil))
		}},
		{"invalid AsReconciler: nil ObjectReconciler", func() (controller.Reconciler[controller.Key], error) {
			return controller.AsReconciler[*corev1.ConfigMap](cms.Lister(), nilFunc)
		}},
		{"invalid AsReconciler: option 1 is nil", func() (controller.Reconciler[controller.Key], error) {
			return controller.AsReconciler(cms.Lister(), calls, controller.WithFinalizers(fins, c), nil)
		}},
		{"invalid WithFinalizers: nil finalizers registry", func() (controller.Reconciler[controller.Key], error) {
			return controller.AsReconciler(cms.Lister(), calls, controller.WithFinalizers(nil, c))
		}},
		{"invalid WithFinalizers: nil patcher", func() (controller.Reconciler[controller.Key], error) {
			return controller.AsReconciler(cms.Lister(), calls, controller.WithFinalizers(fins, nilClient))
		}},
		{"invalid WithFinalizers: given twice: register every finalizer of the type in one registry", func() (controller.Reconciler[controller.Key], error) {
			return controller.AsReconciler(cms.Lister(), calls, controller.WithFinalizers(fins, c), controller.WithFinalizers(fins, c))
		}},
	} {
		r, err := tc.build()
		assert.Nil(t, r, tc.want)
		require.ErrorIs(t, err, controller.ErrInvalidOptions, tc.want)
		assert.EqualError(t, err, tc.want)
	}
}
