package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Names of the PodSet API. The CRD manifest (crd.yaml) must agree with them; a test
// checks that it does.
const (
	// GroupName is the API group of PodSet.
	GroupName = "examples.ctrlkit.dev"
	// Version is the API version of these types.
	Version = "v1alpha1"
	// Kind is the kind of a PodSet object.
	Kind = "PodSet"
	// ListKind is the kind of a list of PodSets.
	ListKind = "PodSetList"
	// Plural is the resource name used in URLs (and by the dynamic client).
	Plural = "podsets"
	// Singular is the singular resource name kubectl accepts.
	Singular = "podset"
	// CRDName is the name of the CustomResourceDefinition object: <plural>.<group>.
	CRDName = Plural + "." + GroupName
)

var (
	// SchemeGroupVersion is the group and version of these types, under the name
	// generated clientsets use.
	SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}
	// GroupVersion is SchemeGroupVersion under the name controller-runtime users know.
	GroupVersion = SchemeGroupVersion
	// GVR is the resource to hand to the dynamic client and to ctrlkit's
	// customresource and informer packages.
	GVR = SchemeGroupVersion.WithResource(Plural)
	// GVK is the group, version and kind of a PodSet object.
	GVK = SchemeGroupVersion.WithKind(Kind)
)

var (
	// SchemeBuilder registers PodSet and PodSetList with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the types of this package to a scheme, e.g. the one behind a
	// fake dynamic client or an event recorder.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Resource qualifies an unqualified resource name (such as "podsets") with this
// package's group, the form API errors such as NotFound use.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &PodSet{}, &PodSetList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
