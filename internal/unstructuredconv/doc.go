// Package unstructuredconv converts custom resources between their
// unstructured form (what the dynamic client and dynamic informers hand out)
// and their Go types. It is the one converter behind both customresource's
// Client and informer's ForResource.
//
// It wraps runtime.DefaultUnstructuredConverter and adds what a controller
// needs from it on input it does not control:
//
//   - an object of another apiVersion or kind is refused, instead of being
//     decoded silently into the wrong type;
//   - a panic inside the converter, or inside a custom UnmarshalJSON of the
//     Go type, becomes an error for that object;
//   - a value that does not fit its field is reported as a *FieldError with
//     the field's path and what was expected and found
//     (spec.replicas: expected int32, got string "three"), where the
//     converter itself only says "unrecognized type: int32".
//
// Callers add which object it was (resource, namespace and name).
package unstructuredconv
