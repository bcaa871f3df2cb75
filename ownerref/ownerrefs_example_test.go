package ownerref_test

import (
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/ownerref"
)

// A ConfigMap shared by two Deployments goes away with the last of them: both are plain
// owners, neither is its controller.
func ExampleSetOwnerReference() {
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "d-1"}}
	api := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "api", UID: "d-2"}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shared"}}

	for _, owner := range []*appsv1.Deployment{web, api, web} { // the second web changes nothing
		if err := ownerref.SetOwnerReference(owner, cm); err != nil {
			fmt.Println(err)
			return
		}
	}
	for _, r := range cm.OwnerReferences {
		fmt.Println(r.Kind, r.Name, r.Controller, r.BlockOwnerDeletion)
	}
	fmt.Println("controlled:", ownerref.HasControllerReference(cm))
	// Output:
	// Deployment web <nil> <nil>
	// Deployment api <nil> <nil>
	// controlled: false
}

// An operator without delete permission on its owner cannot set blockOwnerDeletion: the API
// server would refuse the write.
func ExampleWithBlockOwnerDeletion() {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "rs-1"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}}
	if err := ownerref.SetControllerReference(rs, pod, ownerref.WithBlockOwnerDeletion(false)); err != nil {
		fmt.Println(err)
		return
	}
	ref := pod.OwnerReferences[0]
	fmt.Println(*ref.Controller, *ref.BlockOwnerDeletion)
	// Output: true false
}

// Letting go of an object: it stays, but no longer goes away with its owner.
func ExampleRemoveOwnerReference() {
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "d-1"}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shared"}}
	_ = ownerref.SetOwnerReference(web, cm)

	fmt.Println(ownerref.RemoveOwnerReference(web, cm), len(cm.OwnerReferences))
	err := ownerref.RemoveOwnerReference(web, cm)
	fmt.Println(errors.Is(err, ownerref.ErrNotOwned))
	fmt.Println(err)
	// Output:
	// <nil> 0
	// true
	// remove owner reference of default/shared to Deployment default/web: object has no such owner reference
}

// Orphaning a child for another controller to adopt; only its controller can do so.
func ExampleRemoveControllerReference() {
	web := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "rs-1"}}
	db := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db", UID: "rs-2"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}}
	_ = ownerref.SetControllerReference(web, pod)

	fmt.Println(ownerref.RemoveControllerReference(db, pod))
	fmt.Println(ownerref.RemoveControllerReference(web, pod), ownerref.HasControllerReference(pod))
	// Output:
	// remove controller reference of default/web-0 to ReplicaSet default/db: default/web-0 is controlled by ReplicaSet web (uid rs-1): object has no such owner reference
	// <nil> false
}

// HasOwnerReference matches the owner by group, kind and name, as controller-runtime does;
// IsControlledBy asks about this very owner by UID.
func ExampleHasOwnerReference() {
	web := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "rs-1"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}}
	_ = ownerref.SetControllerReference(web, pod)

	recreated := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "rs-9"}}
	has, err := ownerref.HasOwnerReference(pod, recreated)
	fmt.Println(has, err, ownerref.IsControlledBy(pod, recreated))
	// Output: true <nil> false
}

func ExampleHasControllerReference() {
	web := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "rs-1"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}}
	fmt.Println(ownerref.HasControllerReference(pod))
	_ = ownerref.SetOwnerReference(web, pod)
	fmt.Println(ownerref.HasControllerReference(pod))
	_ = ownerref.SetControllerReference(web, pod)
	fmt.Println(ownerref.HasControllerReference(pod))
	// Output:
	// false
	// false
	// true
}

// gadget is a custom resource's Go type, registered in the program's own scheme.
type gadget struct {
	metav1.TypeMeta
	metav1.ObjectMeta
}

func (g *gadget) DeepCopyObject() runtime.Object { c := *g; return &c }

// controller-runtime's scheme argument: the owner's kind comes from the program's scheme.
func ExampleWithScheme() {
	s := runtime.NewScheme()
	s.AddKnownTypeWithName(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}, &gadget{})
	owner := &gadget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "g", UID: "g-1"}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "g-config"}}
	if err := ownerref.SetControllerReference(owner, cm, ownerref.WithScheme(s)); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cm.OwnerReferences[0].APIVersion, cm.OwnerReferences[0].Kind)
	// Output: example.com/v1 Gadget
}
