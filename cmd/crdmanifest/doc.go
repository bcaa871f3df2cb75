// Command crdmanifest turns the CRD file controller-gen writes (<group>_<plural>.yaml) into
// the crd.yaml an API package embeds: one YAML document under a header saying how it was
// made, with a conversion webhook in spec.conversion when -conversion-service is given
// (controller-gen has no marker for one; kubebuilder projects add it with a kustomize patch).
// It removes the input file, so that only crd.yaml is left to commit.
//
// Run it from go generate after controller-gen, in a module that requires ctrlkit (go generate
// runs in the package's directory, so the paths are the package's files):
//
//	//go:generate go run sigs.k8s.io/controller-tools/cmd/controller-gen@<version> object crd paths=. output:crd:dir=.
//	//go:generate go run github.com/ctrlkit/ctrlkit/cmd/crdmanifest -in tenancy.example.com_tenants.yaml -out crd.yaml
//
// go run builds it at the ctrlkit version the module's go.mod requires; it imports nothing
// beyond the standard library and sigs.k8s.io/yaml, which ctrlkit requires anyway.
// docs/custom-resources.md has the whole path and the version of controller-gen.
//
// The output keeps controller-gen's formatting (keys sorted, the same YAML encoder), so
// regenerating an unchanged package changes nothing.
package main
