package ownerref_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/ownerref"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// The references the in-memory helpers write are the ones kube-apiserver accepts, and the
// owner without UID they refuse is one it refuses too.
func TestOwnerReferencesAPIServer(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ctx, ns := env.Context(), env.Namespace()
	cms := env.Client().CoreV1().ConfigMaps(ns)
	owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	controller, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "controller"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child"}}
	require.NoError(t, ownerref.SetOwnerReference(owner, child, ownerref.WithBlockOwnerDeletion(true)))
	require.NoError(t, ownerref.SetControllerReference(controller, child, ownerref.WithBlockOwnerDeletion(false)))
	child, err = cms.Create(ctx, child, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID, BlockOwnerDeletion: new(true)},
		{APIVersion: "v1", Kind: "ConfigMap", Name: "controller", UID: controller.UID, Controller: new(true), BlockOwnerDeletion: new(false)},
	}, child.OwnerReferences)
	has, err := ownerref.HasOwnerReference(child, owner)
	require.NoError(t, err)
	assert.True(t, has)
	assert.True(t, ownerref.IsControlledBy(child, controller))

	require.NoError(t, ownerref.RemoveControllerReference(controller, child))
	require.NoError(t, ownerref.RemoveOwnerReference(owner, child))
	child, err = cms.Update(ctx, child, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Empty(t, child.OwnerReferences)
	assert.False(t, ownerref.HasControllerReference(child))

	// An owner without UID: refused here, and by the server when written by hand.
	noUID := owner.DeepCopy()
	noUID.UID = ""
	require.ErrorIs(t, ownerref.SetOwnerReference(noUID, child), ownerref.ErrMissingUID)
	child.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner"}}
	_, err = cms.Update(ctx, child, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsInvalid(err), "the server accepted an owner reference without uid (%v)", err)
}
