package controller_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/finalizer"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// A user's journey (issue 28): a controller with Fences.Auto keeps a finalizer on its objects
// with package finalizer. When an object is deleted, the Reconcile runs the cleanup and removes
// the last finalizer, which deletes the object; the patch's fence must not hold the key once the
// object is gone, whichever comes first, the informer's delete event or the fence. Before the
// fix the key waited for the fence's TTL (30 s) when the delete event won the race, and
// WaitForQuiet timed out. Run it with -count=50: the race goes either way.
func TestAutoFenceReleasesTheKeyOfAFinalizedObject(t *testing.T) {
	env := testkit.NewFake(t)
	ns := env.Namespace()
	cms, err := informer.For[*corev1.ConfigMap](env.Factory())
	require.NoError(t, err)
	cmClient, err := client.For[*corev1.ConfigMap](env.Client())
	require.NoError(t, err)

	const name = "example.com/cleanup"
	var cleanups atomic.Int32
	fins := finalizer.New[*corev1.ConfigMap]()
	require.NoError(t, fins.Register(name, func(context.Context, *corev1.ConfigMap) error {
		cleanups.Add(1)
		return nil
	}))
	c, err := controller.New("website", controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
		cm, err := cms.Lister().Get(key.Namespace, key.Name)
		if apierrors.IsNotFound(err) {
			return controller.Result{}, nil
		}
		if err != nil {
			return controller.Result{}, err
		}
		_, _, err = fins.Finalize(ctx, finalizer.InNamespace[*corev1.ConfigMap](cmClient, key.Namespace), cm)
		return controller.Result{}, err
	}), controller.Options[controller.Key]{Fences: &controller.Fences{Auto: true}})
	require.NoError(t, err)
	require.NoError(t, controller.Watch(c, cms, controller.EnqueueObject))
	env.RunController(env.Context(), c)

	cmAPI := env.Client().CoreV1().ConfigMaps(ns)
	_, err = cmAPI.Create(env.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "site"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		cm, err := cmAPI.Get(env.Context(), "site", metav1.GetOptions{})
		return err == nil && finalizer.Has(cm, name)
	}, waitTimeout, time.Millisecond, "the controller adds its finalizer")
	env.WaitForQuiet(waitTimeout)

	require.NoError(t, cmAPI.Delete(env.Context(), "site", metav1.DeleteOptions{}))
	// Well under the fence TTL (30 s): a key held by the fence of the removed object fails here.
	env.WaitForQuiet(waitTimeout)
	_, err = cmAPI.Get(env.Context(), "site", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the last finalizer removed, the object is gone: %v", err)
	assert.Equal(t, int32(1), cleanups.Load(), "the cleanup ran once")
	assert.True(t, c.Stats().Idle())
}
