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
package v1beta1
