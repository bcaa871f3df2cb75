package v1

import _ "embed" // for CRDManifest

// CRDManifest is crd.yaml, the apiextensions.k8s.io/v1 CustomResourceDefinition of WebApp
// that controller-gen generates from this package's types, ready for
// customresource.EnsureCRDFromYAML or kubectl apply. Treat it as read-only; it is shared
// by every caller.
//
//go:embed crd.yaml
var CRDManifest []byte
