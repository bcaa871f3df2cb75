package finalizer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/finalizer"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// The in-memory helpers on a real API server, as ported controller-runtime code uses them:
// the edit rides on a Create or an Update, an Update from a stale copy conflicts, and a name
// the helpers do not validate is refused by the server on a built-in type when written.
func TestInMemoryFinalizersAPIServer(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ctx, ns := env.Context(), env.Namespace()
	cms := env.Client().CoreV1().ConfigMaps(ns)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "in-memory"}}
	require.True(t, finalizer.AddToObject(cm, cleanup))
	created, err := cms.Create(ctx, cm, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{cleanup}, created.Finalizers)

	stale := created.DeepCopy()
	require.True(t, finalizer.AddToObject(created, other))
	updated, err := cms.Update(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{cleanup, other}, updated.Finalizers)

	// The stale copy lacks other; its Update conflicts instead of dropping it.
	require.True(t, finalizer.RemoveFromObject(stale, cleanup))
	_, err = cms.Update(ctx, stale, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsConflict(err), "got %v", err)

	// Not validated in memory; refused by the server on write.
	bad := updated.DeepCopy()
	require.True(t, finalizer.AddToObject(bad, "cleanup"))
	_, err = cms.Update(ctx, bad, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsInvalid(err), "the server accepted a name without a domain prefix (%v)", err)

	// Removing every finalizer lets a deletion complete.
	require.True(t, finalizer.RemoveFromObject(updated, cleanup))
	require.True(t, finalizer.RemoveFromObject(updated, other))
	updated, err = cms.Update(ctx, updated, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Empty(t, updated.Finalizers)
	require.NoError(t, cms.Delete(ctx, "in-memory", metav1.DeleteOptions{}))
	_, err = cms.Get(ctx, "in-memory", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "got %v", err)
}
