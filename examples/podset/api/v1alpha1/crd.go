package v1alpha1

import _ "embed" // for CRDManifest

// CRDManifest is crd.yaml: the apiextensions.k8s.io/v1 CustomResourceDefinition of
// PodSet, ready for customresource.EnsureCRDFromYAML or kubectl apply. Treat it as
// read-only; it is shared by every caller.
//
//go:embed crd.yaml
var CRDManifest []byte
