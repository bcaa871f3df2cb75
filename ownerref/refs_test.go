package ownerref_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/ownerref"
)

func TestControllerOf(t *testing.T) {
	assert.Nil(t, ownerref.ControllerOf(newPod("p", nil)), "no references")
	assert.Nil(t, ownerref.ControllerOf(newPod("p", nil, refTo("cm1"))), "only non-controller references")
	assert.Nil(t, ownerref.ControllerOf(nil))
	assert.Nil(t, ownerref.ControllerOf((*corev1.Pod)(nil)))
	assert.Nil(t, ownerref.ControllerOf(newPod("p", nil, func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{UID: ownerUID, Controller: ptr.To(false)}}
	})), "controller: false")

	pod := newPod("p", nil, refTo("cm1"), controlledBy(ownerUID), refTo("cm2"))
	ref := ownerref.ControllerOf(pod)
	if assert.NotNil(t, ref) {
		assert.Equal(t, ownerUID, ref.UID)
		ref.Name = "changed"
		assert.Equal(t, "owner-of-rs-uid", pod.OwnerReferences[1].Name, "ControllerOf returns a copy")
	}
}

func TestIsControlledBy(t *testing.T) {
	owner := newOwner()
	assert.True(t, ownerref.IsControlledBy(newPod("p", nil, controlledBy(ownerUID)), owner))
	assert.False(t, ownerref.IsControlledBy(newPod("p", nil, controlledBy(foreignUID)), owner))
	assert.False(t, ownerref.IsControlledBy(newPod("p", nil), owner))
	// A non-controller reference to the owner is not control.
	assert.False(t, ownerref.IsControlledBy(newPod("p", nil, func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{UID: ownerUID}}
	}), owner))
	assert.False(t, ownerref.IsControlledBy(nil, owner))
	assert.False(t, ownerref.IsControlledBy(newPod("p", nil, controlledBy(ownerUID)), (*appsv1.ReplicaSet)(nil)))
}

// An empty UID identifies nothing: two of them must not make a match.
func TestIsControlledByEmptyUIDs(t *testing.T) {
	noUID := newOwner(func(rs *appsv1.ReplicaSet) { rs.UID = "" })
	assert.False(t, ownerref.IsControlledBy(newPod("p", nil, controlledBy("")), noUID), "both UIDs empty")
	assert.False(t, ownerref.IsControlledBy(newPod("p", nil, controlledBy(ownerUID)), noUID), "owner UID empty")
	assert.False(t, ownerref.IsControlledBy(newPod("p", nil, controlledBy("")), newOwner()), "controller reference UID empty")
	assert.False(t, ownerref.IsControlledBy(newPod("p", nil), noUID), "no reference, owner UID empty")
}

func TestNewControllerRef(t *testing.T) {
	assert.Equal(t, &metav1.OwnerReference{
		APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: ownerUID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}, ownerref.NewControllerRef(newOwner(), rsGVK))
	assert.Nil(t, ownerref.NewControllerRef(nil, rsGVK))
	core := ownerref.NewControllerRef(newOwner(), corev1.SchemeGroupVersion.WithKind("ReplicationController"))
	assert.Equal(t, "v1", core.APIVersion, "core group has no group prefix")
}
