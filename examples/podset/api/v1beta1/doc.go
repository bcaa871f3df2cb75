// Package v1beta1 holds the Go types of the PodSet custom resource at version v1beta1, the
// hub of its conversions, and the CustomResourceDefinition that serves both versions.
//
// v1beta1 moves v1alpha1's spec.replicas into spec.scale.replicas (a ScaleSpec, nil meaning
// one replica, as a nil v1alpha1 spec.replicas does); everything else is as in v1alpha1. The
// API server stores v1alpha1 and converts through the conversion webhook of
// examples/podset/podsetwebhook, which uses v1alpha1's ConvertTo and ConvertFrom: every
// version converts to and from this one.
//
// CRDManifest lists both versions, v1alpha1 stored, with spec.conversion set to the Webhook
// strategy at the Service podset-webhook in podset-system: install it together with the
// webhook (or point the conversion elsewhere, as the binary with --webhook-url and the tests
// do). Without a working conversion webhook, reading a PodSet as a version it is not stored
// in fails instead of silently losing fields.
//
// As in v1alpha1, controller-gen generates zz_generated.deepcopy.go and crd.yaml from the
// types and their markers (make generate). The CRD is generated from both packages (v1alpha1
// is the storage version, +kubebuilder:storageversion), so its v1alpha1 entry is the one
// v1alpha1's own crd.yaml has. controller-gen has no marker for a conversion webhook; the
// step after it, crdmanifest (cmd/crdmanifest), writes spec.conversion (see the go:generate lines
// below). The webhook's caBundle is left out: whoever installs the webhook knows the
// certificate (podsetwebhook.Install sets url and caBundle itself).
//
// +kubebuilder:object:generate=true
// +groupName=examples.ctrlkit.dev
package v1beta1

//go:generate go run -modfile=../../../../hack/tools/go.mod sigs.k8s.io/controller-tools/cmd/controller-gen object paths=.
//go:generate go run -modfile=../../../../hack/tools/go.mod sigs.k8s.io/controller-tools/cmd/controller-gen crd paths=.;../v1alpha1 output:crd:dir=.
//go:generate go run github.com/ctrlkit/ctrlkit/cmd/crdmanifest -in examples.ctrlkit.dev_podsets.yaml -out crd.yaml -conversion-service podset-system/podset-webhook -conversion-path /convert
