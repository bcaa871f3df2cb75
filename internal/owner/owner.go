package owner

import (
	"sync/atomic"

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
	// synced reports whether the owners' cache holds a full list and the owners' own events
	// are watched: an owner missing from it is then not looked for.
	synced func() bool
	// anyCached returns one cached owner, false when the cache is empty: a custom resource's
	// scope is read off it (Unresolvable). learned caches the answer: 0 not yet known, 1
	// cluster-scoped, 2 namespaced (a resource's scope does not change while it is served).
	anyCached func() (metav1.Object, bool)
	learned   atomic.Int32
}

// NewResolver returns a Resolver for owners of resource gvr and kind (empty when unknown), whose
// cache uidOf reads. While synced returns true, an owner missing from the cache is taken for
// gone (or for one whose own add is still to come and enqueues it): the caller says so only
// when the owners' events are watched too.
// anyCached returns one cached owner (false when none is): it tells the owners' scope when
// client-go does not (Keys, Unresolvable).
func NewResolver(gvr schema.GroupVersionResource, kind string, uidOf func(namespace, name string) (types.UID, bool), synced func() bool, anyCached func() (metav1.Object, bool)) *Resolver {
	r := &Resolver{group: gvr.Group, kind: kind, uidOf: uidOf, synced: synced, anyCached: anyCached}
	r.namespaced, r.known = builtin.Namespaced(gvr)
	return r
}

// Keys returns the key of child's controlling owner when it is cached with the reference's UID
// (a recreated owner of the same name is another object). While synced returns true, an owner
// not in the cache has no key: it is gone, or its own add is still to come. Otherwise Keys
// returns every key the owners' scope allows, so nothing is lost. The keys are the first n
// of the array: an event's mapping allocates nothing here.
func (r *Resolver) Keys(child metav1.Object) (keys [2]cache.ObjectName, n int) {
	ref := r.controllerRef(child)
	if ref == nil {
		return keys, 0
	}
	// A custom resource's scope, once its cache showed it, leaves one key.
	namespaced, known := r.ownersScope()
	var candidates [2]cache.ObjectName
	if ns := child.GetNamespace(); ns != "" && (!known || namespaced) {
		candidates[n], n = cache.ObjectName{Namespace: ns, Name: ref.Name}, n+1
	}
	if !known || !namespaced {
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

// controllerRef returns child's controller reference when it names one of the owners' kind.
func (r *Resolver) controllerRef(child metav1.Object) *metav1.OwnerReference {
	ref := metav1.GetControllerOfNoCopy(child)
	if ref == nil || (r.kind != "" && ref.Kind != r.kind) {
		return nil
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != r.group {
		return nil
	}
	return ref
}

// Unresolvable reports whether child names one of the owners as its controller where none of
// them can be: child is cluster-scoped and the owners are namespaced (the garbage collector
// too treats such a reference as unresolvable). It is how a wiring CheckScopes could not judge
// (a custom resource's scope is the API server's to tell) is caught: the owners' scope is read
// off their cache, and while it is empty Unresolvable is false.
func (r *Resolver) Unresolvable(child metav1.Object) bool {
	if child.GetNamespace() != "" || r.controllerRef(child) == nil {
		return false
	}
	namespaced, known := r.ownersScope()
	return known && namespaced
}

func (r *Resolver) ownersScope() (namespaced, known bool) {
	if r.known {
		return r.namespaced, true
	}
	switch r.learned.Load() {
	case 1:
		return false, true
	case 2:
		return true, true
	}
	if r.anyCached == nil {
		return false, false
	}
	o, ok := r.anyCached()
	if !ok {
		return false, false
	}
	namespaced = o.GetNamespace() != ""
	if namespaced {
		r.learned.Store(2)
	} else {
		r.learned.Store(1)
	}
	return namespaced, true
}

// CheckScopes refuses children of a cluster-scoped resource owned by a namespaced one (the
// garbage collector treats such a reference as unresolvable). It can tell only for resources
// client-go serves; ok is true otherwise, and known false (see Resolver.Unresolvable).
func CheckScopes(children, owners schema.GroupVersionResource) (ok, known bool) {
	childNamespaced, childKnown := builtin.Namespaced(children)
	ownerNamespaced, ownerKnown := builtin.Namespaced(owners)
	if !childKnown || !ownerKnown {
		return true, false
	}
	return childNamespaced || !ownerNamespaced, true
}
