package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodSet keeps a number of identical Pods running (see v1alpha1.PodSet). It is the hub of
// PodSet's conversions.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.scale.replicas`
// +kubebuilder:printcolumn:name="Current",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PodSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the user wants.
	// +optional
	Spec PodSetSpec `json:"spec,omitempty"`
	// Status is what the controller last saw.
	// +optional
	Status PodSetStatus `json:"status,omitempty"`
}

// Hub marks v1beta1 as the version every other version converts to and from.
func (*PodSet) Hub() {}

// PodSetSpec is what the user wants.
type PodSetSpec struct {
	// Scale is how many Pods are wanted (v1alpha1's spec.replicas). Nil means 1.
	// +optional
	Scale *ScaleSpec `json:"scale,omitempty"`
	// Selector picks the Pods that count towards Scale. It must match Template's labels.
	Selector *metav1.LabelSelector `json:"selector"`
	// Template is the Pod the controller creates when there are too few. The CRD keeps it
	// as sent, without a schema of its own: the API server checks the Pods made from it.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Template corev1.PodTemplateSpec `json:"template"`
}

// ScaleSpec is the size of a PodSet.
type ScaleSpec struct {
	// Replicas is the number of Pods wanted.
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas"`
}

// PodSetStatus is what the controller last saw (as in v1alpha1).
type PodSetStatus struct {
	// Replicas is the number of Pods that match the selector and are not being deleted.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// ReadyReplicas is the number of those Pods whose Ready condition is True.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// ObservedGeneration is the metadata.generation this status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are the standard metav1 conditions, one per Type.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PodSetList is a list of PodSets.
//
// +kubebuilder:object:root=true
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
