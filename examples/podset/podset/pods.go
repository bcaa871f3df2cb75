package podset

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
)

// The Pod event handlers: kube-controller-manager's addPod, updatePod and deletePod for a
// custom-resource owner. Each first counts the event against the owner's expectations, then
// enqueues the owner, in that order (see New).

// toOwner maps a Pod to its controlling PodSet, as controller.EnqueueControllerOf does for any
// owner kind.
var toOwner = controller.EnqueueControllerOf[*corev1.Pod](v1alpha1.GVK)

func (c *Controller) addPod(pod *corev1.Pod, _ bool) {
	if pod.DeletionTimestamp != nil {
		// Seen for the first time while already being deleted (a restart of the controller, a
		// relist): for the owner it is a deletion.
		c.deletePod(pod)
		return
	}
	if uid, ok := c.podSetUIDOf(pod); ok {
		c.exp.CreationObserved(uid)
		c.logger.V(4).Info("Pod created", "pod", klog.KObj(pod))
		c.enqueue(toOwner(pod))
		return
	}
	if metav1.GetControllerOf(pod) == nil {
		// An orphan: every PodSet that selects it may want to adopt it.
		c.enqueue(c.podSetsSelecting(pod))
	}
}

func (c *Controller) updatePod(old, cur *corev1.Pod) {
	if old.ResourceVersion == cur.ResourceVersion {
		return // a resync: nothing changed, and the PodSets resync themselves
	}
	labelsChanged := !maps.Equal(old.Labels, cur.Labels)
	if cur.DeletionTimestamp != nil {
		// Graceful deletion starts with this update and ends, maybe much later, with the
		// delete event. Count it now, so the owner can replace the Pod at once; UID tracking
		// makes the delete event count for nothing a second time.
		c.deletePod(cur)
		if labelsChanged {
			c.deletePod(old)
		}
		return
	}
	oldRef, curRef := metav1.GetControllerOf(old), metav1.GetControllerOf(cur)
	refChanged := !apiequality.Semantic.DeepEqual(oldRef, curRef)
	if refChanged && oldRef != nil {
		c.enqueue(toOwner(old)) // the former owner lost a Pod
	}
	if curRef != nil {
		c.enqueue(toOwner(cur)) // readiness, labels...: the owner's status may change
		return
	}
	if labelsChanged || refChanged {
		c.enqueue(c.podSetsSelecting(cur)) // a new or relabelled orphan
	}
}

func (c *Controller) deletePod(pod *corev1.Pod) {
	uid, ok := c.podSetUIDOf(pod)
	if !ok {
		return
	}
	c.exp.DeletionObserved(uid, pod.UID)
	c.logger.V(4).Info("Pod deleted", "pod", klog.KObj(pod))
	c.enqueue(toOwner(pod))
}

// podSetUIDOf returns the UID in the Pod's controller reference when it points at a PodSet.
// Expectations are keyed by that UID, so no cache lookup is needed to count the event, and an
// event of a Pod whose PodSet was replaced under the same name counts for nobody.
func (c *Controller) podSetUIDOf(pod *corev1.Pod) (types.UID, bool) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != v1alpha1.Kind {
		return "", false
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != v1alpha1.GroupName {
		return "", false
	}
	return ref.UID, true
}

// podSetsSelecting returns the keys of the PodSets in the Pod's namespace whose selector
// matches its labels (those that would adopt it). PodSets with a bad selector select nothing.
func (c *Controller) podSetsSelecting(pod *corev1.Pod) []controller.Key {
	if len(pod.Labels) == 0 {
		return nil
	}
	sets, err := c.podsets.Lister().Namespace(pod.Namespace).List(labels.Everything())
	if err != nil {
		c.logger.Error(err, "Listing PodSets for an orphan Pod", "pod", klog.KObj(pod))
		return nil
	}
	var keys []controller.Key
	for _, ps := range sets {
		sel, err := podSelector(ps)
		if err == nil && sel.Matches(labels.Set(pod.Labels)) {
			keys = append(keys, controller.KeyFromObject(ps))
		}
	}
	return keys
}

func (c *Controller) enqueue(keys []controller.Key) {
	for _, k := range keys {
		c.Enqueue(k)
	}
}
