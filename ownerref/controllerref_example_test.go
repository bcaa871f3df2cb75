package ownerref_test

import (
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/ownerref"
)

// A controller sets itself as the controller of the child it is about to create; a second
// controller is refused. The ReplicaSet's kind comes from client-go's scheme.
func ExampleSetControllerReference() {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "rs-1"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}}

	if err := ownerref.SetControllerReference(rs, pod); err != nil {
		fmt.Println(err)
		return
	}
	ref := pod.OwnerReferences[0]
	fmt.Println(ref.APIVersion, ref.Kind, ref.Name, *ref.Controller, *ref.BlockOwnerDeletion)

	other := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db", UID: "rs-2"}}
	err := ownerref.SetControllerReference(other, pod)
	fmt.Println(errors.Is(err, ownerref.ErrAlreadyOwned))
	fmt.Println(err)
	// Output:
	// apps/v1 ReplicaSet web true true
	// true
	// default/web-0 is already controlled by ReplicaSet web (uid rs-1); refusing ReplicaSet db (uid rs-2)
}

// An owner from a metadata informer is a PartialObjectMetadata, which does not say the kind
// of its resource: WithKind does (informer.Informer's GVK gives it).
func ExampleWithKind() {
	podSet := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "ps-1"}}
	gvk := schema.GroupVersionKind{Group: "apps.example.com", Version: "v1alpha1", Kind: "PodSet"}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}}
	err := ownerref.SetControllerReference(podSet, pod)
	fmt.Println(errors.Is(err, ownerref.ErrUnknownKind))
	if err := ownerref.SetControllerReference(podSet, pod, ownerref.WithKind(gvk)); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(pod.OwnerReferences[0].APIVersion, pod.OwnerReferences[0].Kind)
	// Output:
	// true
	// apps.example.com/v1alpha1 PodSet
}
