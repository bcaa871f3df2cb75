package finalizer

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// AddToObject appends the finalizer name to obj's metadata.finalizers in memory and reports
// whether it did: false when obj already has it (or obj is nil). Nothing is sent; write obj
// afterwards (Update, Patch, CreateOrUpdate's mutate). It is controller-runtime's
// controllerutil.AddFinalizer, under another name because Add here is the server-side patch.
//
// Which to choose: Add when the controller only needs the finalizer on the server, since its
// patch carries a resourceVersion precondition and cannot drop a finalizer another writer added
// meanwhile; AddToObject when the finalizer goes into a write the controller makes anyway (a
// Create, or an Update of the whole object), or when porting code that calls AddFinalizer.
//
// Like controller-runtime's, it does not validate name (use ValidateName): the API server
// refuses a name without a domain prefix on built-in types only when the object is written.
// Unlike controller-runtime's, it never writes into the slice obj holds: it sets a new one, so
// a copy that shares the slice (a cached object's shallow copy) is not changed behind its back.
func AddToObject(obj metav1.Object, name string) bool {
	if object.IsNil(obj) {
		return false
	}
	current := obj.GetFinalizers()
	if slices.Contains(current, name) {
		return false
	}
	next := make([]string, 0, len(current)+1)
	next = append(next, current...)
	obj.SetFinalizers(append(next, name))
	return true
}

// RemoveFromObject removes every occurrence of the finalizer name from obj's
// metadata.finalizers in memory and reports whether it removed any: false when obj does not
// have it (or obj is nil). Nothing is sent; write obj afterwards. It is controller-runtime's
// controllerutil.RemoveFinalizer, under another name because Remove here is the server-side
// patch.
//
// Which to choose: Remove when the controller only needs the finalizer gone on the server,
// since its patch carries a resourceVersion precondition and so never writes a finalizer list
// computed from a stale copy; RemoveFromObject when the removal goes into a write the
// controller makes anyway, or when porting code that calls RemoveFinalizer. A plain Update
// carries obj's resourceVersion too, so it is safe as well; a merge patch built from obj
// without one is not.
//
// Names are not validated. The slice obj holds is not written into: a new one is set.
func RemoveFromObject(obj metav1.Object, name string) bool {
	if object.IsNil(obj) {
		return false
	}
	current := obj.GetFinalizers()
	if !slices.Contains(current, name) {
		return false
	}
	next := make([]string, 0, len(current)-1)
	for _, f := range current {
		if f != name {
			next = append(next, f)
		}
	}
	obj.SetFinalizers(next)
	return true
}
