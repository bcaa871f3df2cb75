package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodSet keeps a number of identical Pods running (see v1alpha1.PodSet). It is the hub of
// PodSet's conversions.
type PodSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodSetSpec   `json:"spec,omitempty"`
	Status PodSetStatus `json:"status,omitempty"`
}

// Hub marks v1beta1 as the version every other version converts to and from.
func (*PodSet) Hub() {}

// PodSetSpec is what the user wants.
type PodSetSpec struct {
	// Scale is how many Pods are wanted (v1alpha1's spec.replicas). Nil means 1.
	Scale *ScaleSpec `json:"scale,omitempty"`
	// Selector picks the Pods that count towards Scale. It must match Template's labels.
	Selector *metav1.LabelSelector `json:"selector"`
	// Template is the Pod the controller creates when there are too few.
	Template corev1.PodTemplateSpec `json:"template"`
}

// ScaleSpec is the size of a PodSet.
type ScaleSpec struct {
	// Replicas is the number of Pods wanted.
	Replicas int32 `json:"replicas"`
}

// PodSetStatus is what the controller last saw (as in v1alpha1).
type PodSetStatus struct {
	// Replicas is the number of Pods that match the selector and are not being deleted.
	Replicas int32 `json:"replicas,omitempty"`
	// ReadyReplicas is the number of those Pods whose Ready condition is True.
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// ObservedGeneration is the metadata.generation this status was computed for.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are the standard metav1 conditions, one per Type.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PodSetList is a list of PodSets.
type PodSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []PodSet `json:"items"`
}

// DesiredReplicas returns Scale.Replicas, or 1 when Scale is unset.
func (s *PodSetSpec) DesiredReplicas() int32 {
	if s.Scale == nil {
		return 1
	}
	return s.Scale.Replicas
}
