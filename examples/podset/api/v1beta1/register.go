package v1beta1

import (
	_ "embed" // for CRDManifest

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Names of the PodSet API at this version.
const (
	// GroupName is the API group of PodSet.
	GroupName = "examples.ctrlkit.dev"
	// Version is the API version of these types.
	Version = "v1beta1"
	// Kind is the kind of a PodSet object.
	Kind = "PodSet"
	// ListKind is the kind of a list of PodSets.
	ListKind = "PodSetList"
	// Plural is the resource name used in URLs.
	Plural = "podsets"
	// CRDName is the name of the CustomResourceDefinition object.
	CRDName = Plural + "." + GroupName
	// ConversionPath is the path of the conversion webhook in CRDManifest.
	ConversionPath = "/convert"
)

var (
	// SchemeGroupVersion is the group and version of these types.
	SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}
	// GroupVersion is SchemeGroupVersion under the name controller-runtime users know.
	GroupVersion = SchemeGroupVersion
	// GVR is the resource at this version, for the dynamic client.
	GVR = SchemeGroupVersion.WithResource(Plural)
	// GVK is the group, version and kind of a PodSet object at this version.
	GVK = SchemeGroupVersion.WithKind(Kind)
)

var (
	// SchemeBuilder registers PodSet and PodSetList with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &PodSet{}, &PodSetList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}

// CRDManifest is crd.yaml: the PodSet CustomResourceDefinition serving v1alpha1 (stored) and
// v1beta1, converted by a webhook. Treat it as read-only.
//
//go:embed crd.yaml
var CRDManifest []byte
