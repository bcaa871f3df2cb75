package controller

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/informer"
)

// ChildExpectations is what ObserveChildren counts events into:
// expectations.UIDTracking has these methods, keyed by whatever E its
// controller uses (the owner's Key, or its UID).
type ChildExpectations[E comparable] interface {
	CreationObserved(owner E)
	DeletionObserved(owner E, child types.UID)
}

// ObserveChildren is kube-controller-manager's expectations observer for the
// children an owner creates and deletes (Pods of a ReplicaSet), for
// WithObserver on the Watch of the children: a child's add is a creation
// observed for its owner, and its deletion is a deletion observed, counted
// by the child's UID so that it counts once whichever event shows it first:
// the start of a graceful deletion (a deletionTimestamp, from which the
// child no longer counts), a child first seen already terminating, or the
// delete itself. An update that moves a terminating child to another owner
// counts for both. ownerOf returns the expectations key of a child's
// controlling owner, and false for children of no owner this controller
// keeps expectations for.
//
//	controller.Watch(c, pods, mapPodToOwners,
//		controller.WithPredicates(predicate.ResourceVersionChanged[*corev1.Pod]()),
//		controller.WithObserver(controller.ObserveChildren(exp, ownerUID)))
func ObserveChildren[T informer.Object, E comparable](exp ChildExpectations[E], ownerOf func(T) (E, bool)) informer.Handler[T] {
	return childObserver[T, E]{exp: exp, ownerOf: ownerOf}
}

type childObserver[T informer.Object, E comparable] struct {
	exp     ChildExpectations[E]
	ownerOf func(T) (E, bool)
}

func (o childObserver[T, E]) HandleAdd(obj T, _ bool) {
	if obj.GetDeletionTimestamp() != nil {
		o.deleted(obj)
		return
	}
	if owner, ok := o.ownerOf(obj); ok {
		o.exp.CreationObserved(owner)
	}
}

func (o childObserver[T, E]) HandleUpdate(oldObj, newObj T) {
	if newObj.GetDeletionTimestamp() == nil {
		return
	}
	o.deleted(newObj)
	oldOwner, okOld := o.ownerOf(oldObj)
	if newOwner, okNew := o.ownerOf(newObj); okOld && (!okNew || oldOwner != newOwner) {
		o.exp.DeletionObserved(oldOwner, oldObj.GetUID())
	}
}

func (o childObserver[T, E]) HandleDelete(obj T, _ informer.DeleteInfo) { o.deleted(obj) }

func (o childObserver[T, E]) deleted(obj T) {
	if owner, ok := o.ownerOf(obj); ok {
		o.exp.DeletionObserved(owner, obj.GetUID())
	}
}
