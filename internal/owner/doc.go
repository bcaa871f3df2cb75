// Package owner resolves an object's controller reference to its owner's key in a cache, the
// way kube-controller-manager's controllers resolve it (by name, then by UID), for every scope:
// an owner reference carries no namespace, and a cluster-scoped owner may have namespaced
// children. The controller package's EnqueueControllerOf and the sharding package's children
// handler share it.
package owner
