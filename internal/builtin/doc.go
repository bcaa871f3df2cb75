// Package builtin knows client-go's built-in resources from kubernetes.Interface itself: which
// typed client serves each API type and whether it takes a namespace. The client package binds
// its Client[T] with it, and the controller package reads a built-in resource's scope from it
// (an owner reference cannot point from a cluster-scoped child to a namespaced owner), without
// asking an API server's discovery.
package builtin
