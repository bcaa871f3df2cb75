package v1alpha1

import (
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1beta1"
)

// ConvertTo sets hub to ps at v1beta1: spec.replicas becomes spec.scale.replicas (nil stays
// nil), everything else is copied. Neither object shares memory with the other afterwards.
func (ps *PodSet) ConvertTo(hub *v1beta1.PodSet) error {
	ps.ObjectMeta.DeepCopyInto(&hub.ObjectMeta)
	hub.Spec.Scale = nil
	if ps.Spec.Replicas != nil {
		hub.Spec.Scale = &v1beta1.ScaleSpec{Replicas: *ps.Spec.Replicas}
	}
	hub.Spec.Selector = ps.Spec.Selector.DeepCopy()
	ps.Spec.Template.DeepCopyInto(&hub.Spec.Template)
	st := ps.Status.DeepCopy()
	hub.Status = v1beta1.PodSetStatus{Replicas: st.Replicas, ReadyReplicas: st.ReadyReplicas,
		ObservedGeneration: st.ObservedGeneration, Conditions: st.Conditions}
	return nil
}

// ConvertFrom sets ps to hub at v1alpha1, the reverse of ConvertTo.
func (ps *PodSet) ConvertFrom(hub *v1beta1.PodSet) error {
	hub.ObjectMeta.DeepCopyInto(&ps.ObjectMeta)
	ps.Spec.Replicas = nil
	if hub.Spec.Scale != nil {
		ps.Spec.Replicas = new(hub.Spec.Scale.Replicas)
	}
	ps.Spec.Selector = hub.Spec.Selector.DeepCopy()
	hub.Spec.Template.DeepCopyInto(&ps.Spec.Template)
	st := hub.Status.DeepCopy()
	ps.Status = PodSetStatus{Replicas: st.Replicas, ReadyReplicas: st.ReadyReplicas,
		ObservedGeneration: st.ObservedGeneration, Conditions: st.Conditions}
	return nil
}
