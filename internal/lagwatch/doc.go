// Package lagwatch judges informers against their API server for controller.Options.Freshness,
// shared by a controller and a multicluster controller's clusters:
//
//   - Gate (Freshness.Gate) takes a consistent read of each informer's resource and returns once
//     every cache has reached its read.
//   - Watch (Freshness.MaxLag) takes such a read every MaxLag/4 and reports an informer whose
//     cache has not reached a read taken more than MaxLag ago (after a second consistent read
//     confirms it still lags, so a quiet resource behind the cluster's resourceVersion never
//     trips it), and the informer's catching up.
//
// Holding and releasing keys is the caller's.
package lagwatch
