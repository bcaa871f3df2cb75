// Package v1 holds the Go types of the WebApp custom resource (webapps.examples.ctrlkit.dev,
// version v1) and its CustomResourceDefinition, the API of the operator in examples/webapp.
//
// types.go and register.go are written by hand; controller-gen writes the rest from them
// and from the +kubebuilder markers in their comments: zz_generated.deepcopy.go (the
// DeepCopy functions every runtime.Object needs) and crd.yaml (the CRD with its schema,
// defaults, validation, status subresource and printer columns), embedded as
// [CRDManifest]. After changing the types run
//
//	make generate
//
// and commit what it writes. crd_test.go checks with customresource.VerifyCRD that the
// committed crd.yaml still fits the Go types, so a forgotten regeneration fails the tests.
// See docs/custom-resources.md.
//
// The API server applies the CRD's defaults (spec.replicas 1, spec.port 8080); objects
// that never passed through one, such as a fake cluster's, may leave them unset.
//
// +kubebuilder:object:generate=true
// +groupName=examples.ctrlkit.dev
package v1

//go:generate go run -modfile=../../../../hack/tools/go.mod sigs.k8s.io/controller-tools/cmd/controller-gen object crd paths=. output:crd:dir=.
//go:generate go run github.com/ctrlkit/ctrlkit/cmd/crdmanifest -in examples.ctrlkit.dev_webapps.yaml -out crd.yaml
