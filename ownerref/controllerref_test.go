package ownerref_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/ownerref"
)

func replicaSet(ns, name, uid string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}}
}

func TestSetControllerReference(t *testing.T) {
	rs := replicaSet("default", "web", "rs-1")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "cm-1"}}}}

	require.NoError(t, ownerref.SetControllerReference(rs, pod))
	require.Len(t, pod.OwnerReferences, 2, "other owners stay")
	ref := ownerref.ControllerOf(pod)
	require.NotNil(t, ref)
	require.Equal(t, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-1",
		Controller: new(true), BlockOwnerDeletion: new(true)}, *ref)
	require.True(t, ownerref.IsControlledBy(pod, rs))

	// Idempotent for the same owner.
	before := pod.DeepCopy()
	require.NoError(t, ownerref.SetControllerReference(rs, pod))
	require.Equal(t, before, pod)
}

func TestSetControllerReferenceUpgradesAPlainReferenceToTheSameOwner(t *testing.T) {
	rs := replicaSet("default", "web", "rs-1")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-1"}}}}
	require.NoError(t, ownerref.SetControllerReference(rs, pod))
	require.Len(t, pod.OwnerReferences, 1)
	require.True(t, *pod.OwnerReferences[0].Controller)
}

func TestSetControllerReferenceRefusesASecondController(t *testing.T) {
	first := replicaSet("default", "web", "rs-1")
	second := replicaSet("default", "web-2", "rs-2")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}}
	require.NoError(t, ownerref.SetControllerReference(first, pod))
	before := pod.DeepCopy()

	err := ownerref.SetControllerReference(second, pod)
	require.ErrorIs(t, err, ownerref.ErrAlreadyOwned)
	var owned *ownerref.AlreadyOwnedError
	require.True(t, errors.As(err, &owned))
	require.Equal(t, "rs-1", string(owned.Controller.UID))
	require.Equal(t, "rs-2", string(owned.Owner.UID))
	require.EqualError(t, err, "default/web-0 is already controlled by ReplicaSet web (uid rs-1); refusing ReplicaSet web-2 (uid rs-2)")
	require.Equal(t, before, pod, "a refused call leaves the object alone")

	// A re-created owner (same name, new UID) is another owner too.
	err = ownerref.SetControllerReference(replicaSet("default", "web", "rs-3"), pod)
	require.ErrorIs(t, err, ownerref.ErrAlreadyOwned)
}

func TestSetControllerReferenceRefusesInvalidOwners(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-1"}}

	err := ownerref.SetControllerReference(replicaSet("other", "web", "rs-1"), pod)
	require.ErrorIs(t, err, ownerref.ErrInvalidOwner)
	require.ErrorContains(t, err, "different namespaces")

	err = ownerref.SetControllerReference(replicaSet("default", "web", "rs-1"), node)
	require.ErrorIs(t, err, ownerref.ErrInvalidOwner)
	require.ErrorContains(t, err, "cluster-scoped")

	err = ownerref.SetControllerReference(replicaSet("default", "web", ""), pod)
	require.ErrorIs(t, err, ownerref.ErrMissingUID)

	err = ownerref.SetControllerReference(replicaSet("default", "", "rs-1"), pod)
	require.ErrorIs(t, err, ownerref.ErrInvalidOwner)

	require.ErrorIs(t, ownerref.SetControllerReference(nil, pod), ownerref.ErrNilObject)
	require.ErrorIs(t, ownerref.SetControllerReference(replicaSet("default", "web", "rs-1"), (*corev1.Pod)(nil)), ownerref.ErrNilObject)
	require.Empty(t, pod.OwnerReferences)

	// A cluster-scoped owner may own a namespaced object.
	require.NoError(t, ownerref.SetControllerReference(node, pod))
	require.Equal(t, "Node", ownerref.ControllerOf(pod).Kind)
}

// The owner's kind comes from WithKind, else the owner's TypeMeta, else client-go's scheme; an
// owner of a type none of them knows is refused, naming the type.
func TestSetControllerReferenceResolvesTheOwnersKind(t *testing.T) {
	pod := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}}
	}

	p := pod()
	require.NoError(t, ownerref.SetControllerReference(replicaSet("default", "web", "rs-1"), p))
	require.Equal(t, "apps/v1", ownerref.ControllerOf(p).APIVersion, "from client-go's scheme")

	custom := &unknownOwner{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ps", UID: "ps-1"}}
	err := ownerref.SetControllerReference(custom, pod())
	require.ErrorIs(t, err, ownerref.ErrUnknownKind)
	require.ErrorContains(t, err, "*ownerref_test.unknownOwner")

	custom.APIVersion, custom.Kind = "example.com/v1alpha1", "PodSet"
	p = pod()
	require.NoError(t, ownerref.SetControllerReference(custom, p), "from the owner's TypeMeta")
	require.Equal(t, metav1.OwnerReference{APIVersion: "example.com/v1alpha1", Kind: "PodSet", Name: "ps", UID: "ps-1",
		Controller: new(true), BlockOwnerDeletion: new(true)}, *ownerref.ControllerOf(p))

	custom.TypeMeta = metav1.TypeMeta{}
	p = pod()
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1beta1", Kind: "PodSet"}
	require.NoError(t, ownerref.SetControllerReference(custom, p, ownerref.WithKind(gvk)))
	require.Equal(t, "example.com/v1beta1", ownerref.ControllerOf(p).APIVersion)
}

// unknownOwner is a custom resource type no scheme knows.
type unknownOwner struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
}

func (u *unknownOwner) DeepCopyObject() runtime.Object {
	c := *u
	u.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// A metadata-only owner names its kind only when its apiVersion and kind were set to its
// resource's (controller-runtime's convention); as the metadata client (nothing) or the API
// server (PartialObjectMetadata) leaves them, WithKind must.
func TestSetControllerReferenceMetadataOnlyOwner(t *testing.T) {
	owner := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "rs-1"}}
	require.ErrorIs(t, ownerref.SetControllerReference(owner, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default"}}), ownerref.ErrUnknownKind)
	owner.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata"))
	require.ErrorIs(t, ownerref.SetControllerReference(owner, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default"}}), ownerref.ErrUnknownKind)

	owner.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}}
	require.NoError(t, ownerref.SetControllerReference(owner, pod))
	assert.Equal(t, "apps/v1", pod.OwnerReferences[0].APIVersion)
	assert.Equal(t, "ReplicaSet", pod.OwnerReferences[0].Kind)
}
