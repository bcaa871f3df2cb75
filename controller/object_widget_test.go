package controller_test

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// Widget is the custom resource of the object reconciler's tests: a spec, and a status with
// observedGeneration and conditions behind a status subresource.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WidgetSpec   `json:"spec,omitempty"`
	Status WidgetStatus `json:"status,omitempty"`
}

// WidgetSpec is what the user asks for.
type WidgetSpec struct {
	Size int32 `json:"size,omitempty"`
}

// WidgetStatus is what the operator reports, written with client.PatchStatus.
type WidgetStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Size               int32              `json:"size,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// DeepCopyObject copies w as deepcopy-gen would (conditions included).
func (w *Widget) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if w.Status.Conditions != nil {
		out.Status.Conditions = make([]metav1.Condition, len(w.Status.Conditions))
		for i := range w.Status.Conditions {
			w.Status.Conditions[i].DeepCopyInto(&out.Status.Conditions[i])
		}
	}
	return &out
}

var widgetGVR = schema.GroupVersionResource{Group: "test.ctrlkit.io", Version: "v1", Resource: "widgets"}

// widgetResource declares Widgets to a fake cluster as widgetCRD does to an API server.
var widgetResource = fakecluster.Resource{GVR: widgetGVR, Kind: "Widget", Namespaced: true, StatusSubresource: true}

var widgetCRD = []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.test.ctrlkit.io
spec:
  group: test.ctrlkit.io
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, format: int32}
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
`)
