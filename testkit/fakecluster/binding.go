package fakecluster

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// bind is the pods/binding subresource: it assigns a Pending pod to a node, once.
func (c *Cluster) bind(gvr schema.GroupVersionResource, ns string, in runtime.Object) (runtime.Object, error) {
	b, ok := in.(*corev1.Binding)
	if !ok {
		u, isU := in.(*unstructured.Unstructured)
		if !isU {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("binding: unexpected object %T", in))
		}
		b = &corev1.Binding{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, b); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	}
	c.store.mu.Lock()
	defer c.store.mu.Unlock()
	if ns == "" {
		ns = b.Namespace
	}
	if ns == "" {
		// client-go's fake Pods(ns).Bind sends the Binding's namespace, not the client's:
		// a Binding without one names the Pod of that name, when only one namespace has it.
		var err error
		if ns, err = c.podNamespaceLocked(gvr, b.Name); err != nil {
			return nil, err
		}
	}
	stored, ok := c.store.getLocked(gvr, ns, b.Name)
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), b.Name)
	}
	pod := stored.(*corev1.Pod).DeepCopy()
	if pod.Spec.NodeName != "" {
		return nil, apierrors.NewConflict(gvr.GroupResource(), b.Name,
			fmt.Errorf("pod %s is already assigned to node %q", b.Name, pod.Spec.NodeName))
	}
	pod.Spec.NodeName = b.Target.Name
	setPodCondition(&pod.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(c.clock.Now())})
	if err := c.store.putLocked(gvr, pod, false); err != nil {
		return nil, err
	}
	return in, nil
}

// podNamespaceLocked is the namespace of the one Pod named name; the store's lock is held.
func (c *Cluster) podNamespaceLocked(gvr schema.GroupVersionResource, name string) (string, error) {
	var found []string
	for key := range c.store.objects[gvr] {
		if key.Name == name {
			found = append(found, key.Namespace)
		}
	}
	switch len(found) {
	case 0:
		return "", apierrors.NewNotFound(gvr.GroupResource(), name)
	case 1:
		return found[0], nil
	default:
		slices.Sort(found)
		return "", apierrors.NewBadRequest(fmt.Sprintf("binding: pods named %q in namespaces %q: set the Binding's namespace", name, found))
	}
}

func setPodCondition(st *corev1.PodStatus, cond corev1.PodCondition) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == cond.Type {
			st.Conditions[i] = cond
			return
		}
	}
	st.Conditions = append(st.Conditions, cond)
}
