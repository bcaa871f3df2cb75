package controller

import (
	"errors"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

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
// (owners is normally the controller's primary informer, which it watches:
// a controller that does not should use Owns, which enqueues such an owner).
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
	fn, _ := controllerOf[T](owners, owners.HasSynced, func(err error) { klog.Background().Error(err, "Cannot map an object to its owner") })
	return fn
}

// controllerOf is EnqueueControllerOf, reporting once (to report) the first
// object whose controller reference names one of owners where none can be
// (Resolver.Unresolvable), and returning its resolver for Owns's check. An
// owner missing from the cache is taken for gone while complete returns true
// (see owner.NewResolver).
func controllerOf[T, O informer.Object](owners informer.Informer[O], complete func() bool, report func(error)) (func(T) []Key, *owner.Resolver) {
	r := owner.NewResolver(owners.GVR(), owners.GVK().Kind, func(namespace, name string) (types.UID, bool) {
		o, err := owners.Lister().Get(namespace, name)
		if err != nil {
			return "", false
		}
		return o.GetUID(), true
	}, complete, func() (metav1.Object, bool) {
		objs, err := owners.Lister().List(labels.Everything())
		if err != nil || len(objs) == 0 {
			return nil, false
		}
		return objs[0], true
	})
	var once sync.Once
	return func(obj T) []Key {
		names, n := r.Keys(obj)
		switch n {
		case 0:
			if r.Unresolvable(obj) {
				once.Do(func() { report(unresolvableError(obj, owners)) })
			}
			return nil
		case 1:
			return []Key{Key(names[0])}
		}
		return []Key{Key(names[0]), Key(names[1])}
	}, r
}

// unresolvableError says why child cannot be mapped to its owner, naming both.
func unresolvableError[T, O informer.Object](child T, owners informer.Informer[O]) error {
	ref := metav1.GetControllerOfNoCopy(child)
	return fmt.Errorf("cluster-scoped %q names %s %q as its controller, and %s are namespaced: a cluster-scoped object cannot be owned by a namespaced one; the garbage collector ignores the reference and no event of the object reaches its owner",
		child.GetName(), ref.Kind, ref.Name, owners.GVR().GroupResource())
}

// checkOwnerScopes refuses a wiring no owner reference can serve: children
// of a cluster-scoped resource owned by a namespaced one.
func checkOwnerScopes(children, owners schema.GroupVersionResource) error {
	if ok, _ := owner.CheckScopes(children, owners); !ok {
		return errors.New(scopesReason(children, owners))
	}
	return nil
}

func scopesReason(children, owners schema.GroupVersionResource) string {
	return fmt.Sprintf("%s are cluster-scoped and %s namespaced: a cluster-scoped object cannot be owned by a namespaced one", children.GroupResource(), owners.GroupResource())
}

// checkWirings runs the checks Owns left for when the caches synced: the
// wirings whose scopes only the API server knows (custom resources), judged
// from the objects cached. The first wrong one fails Run.
func (c *Controller[K]) checkWirings() error {
	c.mu.Lock()
	checks := c.checks
	c.mu.Unlock()
	for _, check := range checks {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}
