// Package v1alpha1 holds the Go types of the PodSet custom resource
// (podsets.examples.ctrlkit.dev, version v1alpha1) and its CustomResourceDefinition.
//
// A PodSet keeps spec.replicas Pods stamped from spec.template running, like a
// ReplicaSet, and reports what it sees in its status subresource. The controller that
// does this lives in examples/podset; this package is only the API, so that clients,
// tests and other controllers can import the types without the controller.
//
// There is no code generator here: the DeepCopy functions in deepcopy.go are written by
// hand (and tested to copy every pointer, slice and map), and the CRD manifest crd.yaml is
// written by hand too and embedded as [CRDManifest]. Tests check that the manifest agrees
// with the Go constants and that every JSON field of the Go types has a schema.
//
// Minimal use with ctrlkit's typed custom resource client:
//
//	podsets, err := customresource.NewClient[*v1alpha1.PodSet](dyn, v1alpha1.GVR)
//	ps, err := podsets.Get(ctx, "default", "web", metav1.GetOptions{})
//
// and to install the CRD on a real cluster:
//
//	err := customresource.EnsureCRDFromYAML(ctx, dyn, v1alpha1.CRDManifest)
package v1alpha1
