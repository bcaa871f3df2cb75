package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodSet keeps a number of identical Pods running, like a ReplicaSet: the controller
// creates Pods from Spec.Template until Spec.Replicas Pods match Spec.Selector, deletes
// the surplus, and owns every Pod it adopts through a controller owner reference, so
// deleting the PodSet lets the garbage collector delete its Pods (no finalizer).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`
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

// PodSetSpec is what the user wants.
type PodSetSpec struct {
	// Replicas is the number of Pods wanted. Nil means 1 (the CRD defaults it to 1, so
	// objects read from a real API server always have it set).
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`
	// Selector picks the Pods that count towards Replicas. It must match the labels of
	// Template.
	Selector *metav1.LabelSelector `json:"selector"`
	// Template is the Pod the controller creates when there are too few. The CRD keeps it
	// as sent, without a schema of its own: the API server checks the Pods made from it.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Template corev1.PodTemplateSpec `json:"template"`
}

// PodSetStatus is what the controller last saw. It is written through the status
// subresource only.
type PodSetStatus struct {
	// Replicas is the number of Pods that match the selector and are not being deleted.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// ReadyReplicas is the number of those Pods whose Ready condition is True.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// ObservedGeneration is the metadata.generation this status was computed for; when
	// it is below metadata.generation the status is stale.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are the standard metav1 conditions, one per Type.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PodSetList is a list of PodSets, the body of a LIST response.
//
// +kubebuilder:object:root=true
type PodSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []PodSet `json:"items"`
}

// Condition types a PodSet reports.
const (
	// ConditionAvailable is True when Status.ReadyReplicas has reached the wanted replicas.
	ConditionAvailable = "Available"
	// ConditionReplicaFailure is True when creating or deleting a Pod failed; its message
	// says why.
	ConditionReplicaFailure = "ReplicaFailure"
)

// DesiredReplicas returns Spec.Replicas, or 1 when it is unset (the CRD's default).
func (s *PodSetSpec) DesiredReplicas() int32 {
	if s.Replicas == nil {
		return 1
	}
	return *s.Replicas
}
