// Package podsetwebhook holds the webhooks of the PodSet custom resource: defaulting and
// validation of PodSets (admission) and conversion between v1alpha1 and v1beta1, served with
// package webhook, and the configurations that make an API server call them.
//
// Defaulting (Default): spec.replicas 1 when unset, a selector made from the template's labels
// when unset, and the label app.kubernetes.io/managed-by=podset-controller on the PodSet.
//
// Validation (ValidateCreate, ValidateUpdate): spec.replicas at least 0, a selector that is
// not empty, parses and matches the template's labels (else the PodSet's Pods would never
// count towards it), and a selector that never changes after creation (as apps/v1 ReplicaSets
// keep theirs: a new selector would orphan every Pod). Errors are field errors, so the API
// server answers 422 Invalid naming each field.
//
// Conversion (NewConversion): v1beta1 is the hub; v1alpha1 converts to and from it, moving
// spec.replicas to spec.scale.replicas and back. The admission webhooks are registered for
// v1alpha1 only: a request made at v1beta1 is converted to v1alpha1 before they see it (the
// configurations' matchPolicy Equivalent), so one Defaulter and one Validator serve both
// versions.
package podsetwebhook
