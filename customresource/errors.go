package customresource

import (
	"errors"
	"strings"

	"github.com/ctrlkit/ctrlkit/internal/errs"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// ErrInvalidInput is wrapped by every error about an argument the caller passed: a
	// nil client or object, a GroupVersionResource without version or resource, a type
	// parameter that is not a pointer to a struct, an apply without a field manager. It is
	// the same value as client.ErrInvalidInput.
	ErrInvalidInput = errs.ErrInvalidInput

	// ErrInvalidManifest is wrapped by EnsureCRDFromYAML's error for a manifest that is not
	// exactly one apiextensions.k8s.io/v1 CustomResourceDefinition with a name.
	ErrInvalidManifest = errors.New("invalid CustomResourceDefinition manifest")

	// ErrCRDNotEstablished is wrapped by EnsureCRDFromYAML's error when the
	// CustomResourceDefinition did not become Established in time, or cannot become
	// Established because the API server refused its names.
	ErrCRDNotEstablished = errors.New("CustomResourceDefinition not established")
)

// ConversionError reports an object that could not be converted between its
// unstructured form (what the dynamic client sends and receives) and the Go type T.
// Match it with errors.As; Err holds the converter's own error.
type ConversionError struct {
	// Resource is the client's resource.
	Resource schema.GroupVersionResource
	// Namespace and Name identify the object, as far as they could be read; both are
	// empty when the object had no readable metadata.
	Namespace, Name string
	// GoType is T, e.g. "*v1alpha1.PodSet".
	GoType string
	// ToUnstructured is true when a T was being encoded for the API server and false when
	// an object from the API server was being decoded into a T.
	ToUnstructured bool
	// Field is the path of the first field whose value did not fit T, such as
	// spec.replicas, when the cause is such a value; empty otherwise. Err then says what
	// the field expected and what it held.
	Field string
	// Err is the cause.
	Err error
}

func (e *ConversionError) Error() string {
	var b strings.Builder
	b.WriteString("customresource: cannot convert ")
	if e.ToUnstructured {
		b.WriteString(e.GoType + " " + e.objectKey() + " to unstructured for " + resourceString(e.Resource))
	} else {
		b.WriteString(resourceString(e.Resource) + " " + e.objectKey() + " to " + e.GoType)
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

func (e *ConversionError) Unwrap() error { return e.Err }

func (e *ConversionError) objectKey() string {
	switch {
	case e.Name == "" && e.Namespace == "":
		return `"<unnamed>"`
	case e.Namespace == "":
		return `"` + e.Name + `"`
	default:
		return `"` + e.Namespace + "/" + e.Name + `"`
	}
}

// resourceString writes a resource the way kubectl accepts it: podsets.v1alpha1.examples.ctrlkit.dev.
func resourceString(gvr schema.GroupVersionResource) string {
	s := gvr.Resource + "." + gvr.Version
	if gvr.Group != "" {
		s += "." + gvr.Group
	}
	return s
}
