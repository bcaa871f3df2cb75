// Package builtin knows client-go's built-in resources from kubernetes.Interface itself: which
// group client serves each API type, its resource, list type, scope and status subresource, and
// builds the typed client of a type the way client-go's generated code does (gentype), over a
// real clientset's REST client or a fake clientset's *testing.Fake. The client package binds
// its Client[T] with it, informers of built-in types list and watch through it, and the
// controller package reads a built-in resource's scope from it (an owner reference cannot point
// from a cluster-scoped child to a namespaced owner), without asking an API server's discovery.
package builtin
