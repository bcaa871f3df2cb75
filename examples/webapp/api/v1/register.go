package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Names of the WebApp API. The generated crd.yaml agrees with them (crd_test.go checks).
const (
	// GroupName is the API group of WebApp (the +groupName marker in doc.go).
	GroupName = "examples.ctrlkit.dev"
	// Version is the API version of these types (the package's name).
	Version = "v1"
	// Kind is the kind of a WebApp object.
	Kind = "WebApp"
	// Plural is the resource name used in URLs and by the dynamic client.
	Plural = "webapps"
	// CRDName is the name of the CustomResourceDefinition object: <plural>.<group>.
	CRDName = Plural + "." + GroupName
)

var (
	// GroupVersion is the group and version of these types, as controller-runtime names
	// it in a kubebuilder project's groupversion_info.go.
	GroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}
	// GVR is the resource to hand to the dynamic client and to ctrlkit's customresource
	// and informer packages.
	GVR = GroupVersion.WithResource(Plural)
	// GVK is the group, version and kind of a WebApp object.
	GVK = GroupVersion.WithKind(Kind)

	// SchemeBuilder registers WebApp and WebAppList with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the types of this package to a scheme, e.g. a Manager's
	// Options.Scheme, so that informers and event recorders know their kind.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &WebApp{}, &WebAppList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
