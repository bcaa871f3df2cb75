// Package v1alpha1 holds the Go types of the PodSet custom resource
// (podsets.examples.ctrlkit.dev, version v1alpha1) and its CustomResourceDefinition.
//
// A PodSet keeps spec.replicas Pods stamped from spec.template running, like a
// ReplicaSet, and reports what it sees in its status subresource. The controller that
// does this lives in examples/podset; this package is only the API, so that clients,
// tests and other controllers can import the types without the controller.
//
// types.go and register.go are written by hand. controller-gen generates the rest from them
// and the +kubebuilder markers in their comments (make generate, see the go:generate lines
// below and docs/custom-resources.md): the DeepCopy functions in zz_generated.deepcopy.go
// and the CRD manifest crd.yaml, embedded as [CRDManifest]. Tests check that the manifest
// agrees with the Go constants and, with customresource.VerifyCRD, that its schema still
// fits the Go types, and that a deep copy shares no memory with its original.
//
// Minimal use with ctrlkit's typed custom resource client:
//
//	podsets, err := customresource.NewClient[*v1alpha1.PodSet](dyn, v1alpha1.GVR)
//	ps, err := podsets.Get(ctx, "default", "web", metav1.GetOptions{})
//
// and to install the CRD on a real cluster:
//
//	err := customresource.EnsureCRDFromYAML(ctx, dyn, v1alpha1.CRDManifest)
//
// +kubebuilder:object:generate=true
// +groupName=examples.ctrlkit.dev
package v1alpha1

//go:generate go run -modfile=../../../../hack/tools/go.mod sigs.k8s.io/controller-tools/cmd/controller-gen object crd paths=. output:crd:dir=.
//go:generate go run github.com/ctrlkit/ctrlkit/cmd/crdmanifest -in examples.ctrlkit.dev_podsets.yaml -out crd.yaml
