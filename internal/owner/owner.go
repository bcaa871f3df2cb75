package owner

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/internal/builtin"
)

// Resolver finds the controlling owner of children among the objects of one resource.
type Resolver struct {
	group string
	kind  string // "": any kind of group (the owners' kind is unknown)
	// namespaced is the owners' scope when client-go serves their resource (known); a custom
	// resource's is read off the cache instead, by trying both keys.
	namespaced, known bool
	// uidOf returns the UID of the cached owner at namespace/name, false when none is cached.
	uidOf func(namespace, name string) (types.UID, bool)
	// synced reports whether the owners' cache holds a full list.
	synced func() bool
}

// NewResolver returns a Resolver for owners of resource gvr and kind (empty when unknown), whose
// cache uidOf reads and synced says is filled.
func NewResolver(gvr schema.GroupVersionResource, kind string, uidOf func(namespace, name string) (types.UID, bool), synced func() bool) *Resolver {
	r := &Resolver{group: gvr.Group, kind: kind, uidOf: uidOf, synced: synced}
	r.namespaced, r.known = builtin.Namespaced(gvr)
	return r
}

// Keys returns the key of child's controlling owner when it is cached with the reference's UID
// (a recreated owner of the same name is another object). Once the owners' cache synced, an
// owner not in it has no key: it is gone, or its own add is still to come. Before, Keys returns
// every key the owners' scope allows, so nothing is lost at start-up. The keys are the first n
// of the array: an event's mapping allocates nothing here.
func (r *Resolver) Keys(child metav1.Object) (keys [2]cache.ObjectName, n int) {
	ref := metav1.GetControllerOfNoCopy(child)
	if ref == nil || (r.kind != "" && ref.Kind != r.kind) {
		return keys, 0
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != r.group {
		return keys, 0
	}
	var candidates [2]cache.ObjectName
	if ns := child.GetNamespace(); ns != "" && (!r.known || r.namespaced) {
		candidates[n], n = cache.ObjectName{Namespace: ns, Name: ref.Name}, n+1
	}
	if !r.known || !r.namespaced {
		// A cluster-scoped owner; a cluster-scoped child can have no other.
		candidates[n], n = cache.ObjectName{Name: ref.Name}, n+1
	}
	for _, k := range candidates[:n] {
		if uid, ok := r.uidOf(k.Namespace, k.Name); ok && uid == ref.UID {
			keys[0] = k
			return keys, 1
		}
	}
	if n == 0 || r.synced() {
		return keys, 0
	}
	return candidates, n
}

// CheckScopes refuses children of a cluster-scoped resource owned by a namespaced one (the
// garbage collector treats such a reference as unresolvable). It can tell only for resources
// client-go serves; ok is true otherwise.
func CheckScopes(children, owners schema.GroupVersionResource) (ok bool) {
	childNamespaced, childKnown := builtin.Namespaced(children)
	ownerNamespaced, ownerKnown := builtin.Namespaced(owners)
	return !childKnown || !ownerKnown || childNamespaced || !ownerNamespaced
}
