package podset

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
)

// How Pod events reach PodSets (see New): kube-controller-manager's addPod, updatePod and
// deletePod for a custom-resource owner, as a mapping and an expectations observer.

// podOwners maps a Pod to the PodSets to sync: its controller, or, for an orphan, every PodSet
// that selects it (those that may adopt it). An update reaches the owners of both the old and
// the new Pod, so a PodSet that lost a Pod hears of it.
func (c *Controller) podOwners(pod *corev1.Pod) []controller.Key {
	if metav1.GetControllerOfNoCopy(pod) != nil {
		return c.toOwner(pod)
	}
	return c.podSetsSelecting(pod)
}

// podSetUIDOf returns the UID in the Pod's controller reference when it points at a PodSet.
// Expectations are keyed by that UID, so no cache lookup is needed to count the event, and an
// event of a Pod whose PodSet was replaced under the same name counts for nobody.
func podSetUIDOf(pod *corev1.Pod) (types.UID, bool) {
	ref := metav1.GetControllerOfNoCopy(pod)
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
