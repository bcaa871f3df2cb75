// Package compat runs the same inputs through ctrlkit's featuregate and through
// k8s.io/component-base/featuregate v0.37.2 (and its testing helper, compatibility and
// metrics packages) and compares what they answer: enabled values, error texts, help
// lines, flag strings and the kubernetes_feature_enabled gauge.
//
// It is a separate, test-only module so that the main module does not depend on
// component-base. Where ctrlkit differs on purpose (see the featuregate package doc,
// "Differences from component-base"), the scenario says so and checks each side's own
// answer; everything else must match exactly.
//
// Run it with `make test` from the repository root, or `go test ./...` here.
package compat
