// Package podsetwebhook holds the webhooks of the PodSet custom resource: defaulting and
// validation of PodSets (admission), served with package webhook, and the configurations that
// make an API server call them.
//
// Defaulting (Default): spec.replicas 1 when unset, a selector made from the template's labels
// when unset, and the label app.kubernetes.io/managed-by=podset-controller on the PodSet.
//
// Validation (ValidateCreate, ValidateUpdate): spec.replicas at least 0, a selector that is
// not empty, parses and matches the template's labels (else the PodSet's Pods would never
// count towards it), and a selector that never changes after creation (as apps/v1 ReplicaSets
// keep theirs: a new selector would orphan every Pod). Errors are field errors, so the API
// server answers 422 Invalid naming each field.
package podsetwebhook
