package controller_test

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/expectations"
	"github.com/ctrlkit/ctrlkit/informer"
)

// ObserveChildren counts a ReplicaSet's Pod events against its expectations, as
// kube-controller-manager's ReplicaSet controller does. In a controller it is an option of the
// Pods' Watch:
//
//	controller.Watch(c, pods, controller.EnqueueControllerOf[*corev1.Pod](replicaSets),
//		controller.WithPredicates(predicate.ResourceVersionChanged[*corev1.Pod]()),
//		controller.WithObserver(controller.ObserveChildren(exp, ownerKey)))
func ExampleObserveChildren() {
	rsKind := appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	// In a controller, the Pods' Watch maps with EnqueueControllerOf and
	// ownerKey resolves the same reference for the expectations.
	ownerKey := func(pod *corev1.Pod) (controller.Key, bool) {
		if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == rsKind.Kind {
			return controller.Key{Namespace: pod.Namespace, Name: ref.Name}, true
		}
		return controller.Key{}, false
	}
	exp := expectations.NewUIDTracking[controller.Key]()
	observe := controller.ObserveChildren(exp, ownerKey)

	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "rs-uid"}}
	key := controller.KeyFromObject(rs)
	exp.ExpectCreations(key, 2) // the sync sends two creates
	for _, name := range []string{"web-1", "web-2"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}
		pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(rs, rsKind)}
		fmt.Println("satisfied before", name, "is seen:", exp.Satisfied(key))
		observe.HandleAdd(pod, false)
	}
	fmt.Println("satisfied:", exp.Satisfied(key))

	// A Pod whose graceful deletion starts no longer counts: the deletion is observed then.
	gone := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1", UID: "uid-web-1"}}
	gone.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(rs, rsKind)}
	exp.ExpectDeletions(key, []types.UID{"uid-web-1"})
	terminating := gone.DeepCopy()
	terminating.DeletionTimestamp = &metav1.Time{}
	observe.HandleUpdate(gone, terminating)
	fmt.Println("deletion observed:", exp.Satisfied(key))
	observe.HandleDelete(terminating, informer.DeleteInfo{Key: "default/web-1"}) // counts nothing twice
	// Output:
	// satisfied before web-1 is seen: false
	// satisfied before web-2 is seen: false
	// satisfied: true
	// deletion observed: true
}
