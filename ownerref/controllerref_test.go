package ownerref_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/ownerref"
)

var rsKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

func replicaSet(ns, name, uid string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}}
}

func TestSetControllerReference(t *testing.T) {
	rs := replicaSet("default", "web", "rs-1")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "cm-1"}}}}

	require.NoError(t, ownerref.SetControllerReference(rs, pod, rsKind))
	require.Len(t, pod.OwnerReferences, 2, "other owners stay")
	ref := ownerref.ControllerOf(pod)
	require.NotNil(t, ref)
	require.Equal(t, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-1",
		Controller: new(true), BlockOwnerDeletion: new(true)}, *ref)
	require.True(t, ownerref.IsControlledBy(pod, rs))

	// Idempotent for the same owner.
	before := pod.DeepCopy()
	require.NoError(t, ownerref.SetControllerReference(rs, pod, rsKind))
	require.Equal(t, before, pod)
}

func TestSetControllerReferenceUpgradesAPlainReferenceToTheSameOwner(t *testing.T) {
	rs := replicaSet("default", "web", "rs-1")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-1"}}}}
	require.NoError(t, ownerref.SetControllerReference(rs, pod, rsKind))
	require.Len(t, pod.OwnerReferences, 1)
	require.True(t, *pod.OwnerReferences[0].Controller)
}

func TestSetControllerReferenceRefusesASecondController(t *testing.T) {
	first := replicaSet("default", "web", "rs-1")
	second := replicaSet("default", "web-2", "rs-2")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}}
	require.NoError(t, ownerref.SetControllerReference(first, pod, rsKind))
	before := pod.DeepCopy()

	err := ownerref.SetControllerReference(second, pod, rsKind)
	require.ErrorIs(t, err, ownerref.ErrAlreadyOwned)
	var owned *ownerref.AlreadyOwnedError
	require.True(t, errors.As(err, &owned))
	require.Equal(t, "rs-1", string(owned.Controller.UID))
	require.Equal(t, "rs-2", string(owned.Owner.UID))
	require.EqualError(t, err, "default/web-0 is already controlled by ReplicaSet web (uid rs-1); refusing ReplicaSet web-2 (uid rs-2)")
	require.Equal(t, before, pod, "a refused call leaves the object alone")

	// A re-created owner (same name, new UID) is another owner too.
	err = ownerref.SetControllerReference(replicaSet("default", "web", "rs-3"), pod, rsKind)
	require.ErrorIs(t, err, ownerref.ErrAlreadyOwned)
}

func TestSetControllerReferenceRefusesInvalidOwners(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-1"}}

	err := ownerref.SetControllerReference(replicaSet("other", "web", "rs-1"), pod, rsKind)
	require.ErrorIs(t, err, ownerref.ErrInvalidOwner)
	require.ErrorContains(t, err, "different namespaces")

	err = ownerref.SetControllerReference(replicaSet("default", "web", "rs-1"), node, rsKind)
	require.ErrorIs(t, err, ownerref.ErrInvalidOwner)
	require.ErrorContains(t, err, "cluster-scoped")

	err = ownerref.SetControllerReference(replicaSet("default", "web", ""), pod, rsKind)
	require.ErrorIs(t, err, ownerref.ErrMissingUID)

	err = ownerref.SetControllerReference(replicaSet("default", "web", "rs-1"), pod, appsv1.SchemeGroupVersion.WithKind(""))
	require.ErrorIs(t, err, ownerref.ErrInvalidOwner)

	require.ErrorIs(t, ownerref.SetControllerReference(nil, pod, rsKind), ownerref.ErrNilObject)
	require.ErrorIs(t, ownerref.SetControllerReference(replicaSet("default", "web", "rs-1"), (*corev1.Pod)(nil), rsKind), ownerref.ErrNilObject)
	require.Empty(t, pod.OwnerReferences)

	// A cluster-scoped owner may own a namespaced object.
	require.NoError(t, ownerref.SetControllerReference(node, pod, corev1.SchemeGroupVersion.WithKind("Node")))
	require.Equal(t, "Node", ownerref.ControllerOf(pod).Kind)
}
