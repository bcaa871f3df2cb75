package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WebApp runs a container image as a Deployment behind a Service. The controller in
// examples/webapp owns both, repairs hand edits to them, and reports in Status how many
// replicas are ready.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WebApp struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the user wants.
	// +required
	Spec WebAppSpec `json:"spec"`
	// Status is what the controller last saw, written through the status subresource.
	// +optional
	Status WebAppStatus `json:"status,omitempty"`
}

// WebAppSpec is what the user wants.
type WebAppSpec struct {
	// Image is the container image to run.
	// +kubebuilder:validation:MinLength=1
	Image string `json:"image"`
	// Replicas is the number of Pods wanted. Unset means 1, the default the API server
	// writes.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`
	// Port is the container port the Service sends traffic to. Unset means 8080, the
	// default the API server writes.
	// +optional
	// +kubebuilder:default=8080
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`
}

// WebAppStatus is what the controller last saw.
type WebAppStatus struct {
	// ObservedGeneration is the metadata.generation this status was computed for; when it
	// is below metadata.generation the status is stale.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ReadyReplicas is the number of the Deployment's Pods that are ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Conditions are the standard metav1 conditions, one per type (ConditionReady).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// WebAppList is a list of WebApps, the body of a LIST response.
//
// +kubebuilder:object:root=true
type WebAppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []WebApp `json:"items"`
}

// ConditionReady is the condition type a WebApp reports: True when every wanted replica
// is ready.
const ConditionReady = "Ready"
