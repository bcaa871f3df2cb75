package podset

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
)

// PodObserver is the expectations observer New puts on the Pod watch, for tests that call
// Reconcile by hand without running the controller (whose watches register only in Run).
func (c *Controller) PodObserver() informer.Handler[*corev1.Pod] {
	return controller.ObserveChildren(c.exp, podSetUIDOf)
}
