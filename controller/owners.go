package controller

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/object"
	"github.com/ctrlkit/ctrlkit/internal/owner"
)

// EnqueueControllerOf returns a mapping of an object to the Key of its
// controlling owner when that owner is one of owners' objects, and to nothing
// otherwise: the usual mapping for the children a controller creates (Pods of
// a ReplicaSet, Namespaces of a cluster-scoped Tenant). An update whose
// controller reference changed reaches both the old and the new owner.
//
// The owner is found the way kube-controller-manager resolves a controller
// reference: by name in owners' cache, and only when the cached object has the
// reference's UID (a recreated owner of the same name is another object). So
// the key is right for every scope: "namespace/name" for an owner in the
// child's namespace, "name" alone for a cluster-scoped owner (an owner
// reference carries no namespace, and a cluster-scoped owner may have
// namespaced children). An owner not in the cache enqueues nothing once owners
// has synced: it is gone, or its own add is still to come and enqueues it
// (owners is normally the controller's primary informer, which it watches).
// Before owners synced, the keys its scope allows are enqueued, so nothing is
// lost at start-up.
//
// The reference must name owners' group, and its kind when owners knows one
// (any version: owner references name whatever version the owner was created
// with). owners may be typed, unstructured or metadata-only, built-in or
// custom. The name is controller-runtime's handler.EnqueueRequestForOwner
// with OnlyControllerOwner. A nil owners maps every object to nothing (Owns
// refuses it with an error).
//
//	controller.Watch(c, pods, controller.EnqueueControllerOf[*corev1.Pod](replicaSets))
func EnqueueControllerOf[T, O informer.Object](owners informer.Informer[O]) func(T) []Key {
	if object.IsNil(owners) {
		return func(T) []Key { return nil }
	}
	r := owner.NewResolver(owners.GVR(), owners.GVK().Kind, func(namespace, name string) (types.UID, bool) {
		o, err := owners.Lister().Get(namespace, name)
		if err != nil {
			return "", false
		}
		return o.GetUID(), true
	}, owners.HasSynced)
	return func(obj T) []Key {
		names, n := r.Keys(obj)
		switch n {
		case 0:
			return nil
		case 1:
			return []Key{Key(names[0])}
		}
		return []Key{Key(names[0]), Key(names[1])}
	}
}

// checkOwnerScopes refuses a wiring no owner reference can serve: children
// of a cluster-scoped resource owned by a namespaced one.
func checkOwnerScopes(children, owners schema.GroupVersionResource) error {
	if !owner.CheckScopes(children, owners) {
		return fmt.Errorf("%s are cluster-scoped and %s namespaced: a cluster-scoped object cannot be owned by a namespaced one", children.GroupResource(), owners.GroupResource())
	}
	return nil
}
