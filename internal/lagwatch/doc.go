// Package lagwatch is the watch behind Freshness.MaxLag, shared by a controller's breaker and a
// multicluster controller's per-cluster ones: it takes a consistent read of each informer's
// resource every MaxLag/4 and reports an informer whose cache has not reached a read taken more
// than MaxLag ago (after a second consistent read confirms it still lags, so a quiet resource
// behind the cluster's resourceVersion never trips it), and the informer's catching up.
// Holding and releasing keys is the caller's.
package lagwatch
