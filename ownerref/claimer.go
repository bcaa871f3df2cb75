package ownerref

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// ClaimerOptions configures a Claimer beyond what NewClaimer takes. The zero value is the
// default.
type ClaimerOptions struct {
	// PatchType is how adoptions and releases are written.
	//
	// "" or types.StrategicMergePatchType (the default, what kube-controller-manager sends):
	// a one-entry ownerReferences patch merged by uid, which only built-in kinds support.
	//
	// types.MergePatchType, for custom resources (the API server answers 415 to a strategic
	// merge patch on them): a JSON merge patch cannot add or remove one list entry, so it
	// carries the whole new ownerReferences list computed from the claimed object plus that
	// object's resourceVersion, and a stale object gets a Conflict (retry after the cache
	// catches up) instead of overwriting references added meanwhile. (An object without a
	// resourceVersion, i.e. not read from a server, is patched without that check.)
	//
	// Both carry the child's metadata.uid as a precondition. Other patch types are rejected
	// with ErrInvalidClaimer.
	PatchType types.PatchType
}

// Claimer adopts and releases the children of one owner, the way kube-controller-manager's
// ControllerRefManager does. Create one per sync of the owner: canAdopt runs at most once per
// Claimer, and its answer is remembered for the Claimer's life.
//
// A Claimer is safe for concurrent use.
type Claimer[T metav1.Object] struct {
	owner     metav1.Object
	ownerGVK  schema.GroupVersionKind
	selector  labels.Selector
	patcher   Patcher[T]
	patchType types.PatchType

	canAdopt    func(ctx context.Context) error
	canAdoptOne sync.Once
	canAdoptErr error
}

// NewClaimer returns a Claimer for the children of owner (of kind ownerGVK) that selector
// matches. canAdopt runs once, before the first adoption; pass RecheckOwner (a fresh,
// uncached GET of the owner) so that an owner whose deletion the cache has not seen yet
// adopts nothing. A nil canAdopt allows adoption with only the cached owner checked. A nil
// selector matches nothing. patch writes the adoption and release patches (PodsPatcher,
// ClientPatcher, ...).
//
// Name the child type: Go cannot infer T from patch (Patcher's method does not mention T):
//
//	c := ownerref.NewClaimer[*corev1.Pod](rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
//		selector, canAdopt, ownerref.PodsPatcher(client))
func NewClaimer[T metav1.Object](owner metav1.Object, ownerGVK schema.GroupVersionKind, selector labels.Selector, canAdopt func(ctx context.Context) error, patch Patcher[T]) *Claimer[T] {
	return NewClaimerWithOptions[T](owner, ownerGVK, selector, canAdopt, patch, ClaimerOptions{})
}

// NewClaimerWithOptions is NewClaimer with options (the patch type for custom resources).
func NewClaimerWithOptions[T metav1.Object](owner metav1.Object, ownerGVK schema.GroupVersionKind, selector labels.Selector, canAdopt func(ctx context.Context) error, patch Patcher[T], opts ClaimerOptions) *Claimer[T] {
	if selector == nil {
		selector = labels.Nothing()
	}
	pt := opts.PatchType
	if pt == "" {
		pt = types.StrategicMergePatchType
	}
	return &Claimer[T]{owner: owner, ownerGVK: ownerGVK, selector: selector, patcher: patch, patchType: pt, canAdopt: canAdopt}
}

func (c *Claimer[T]) validate() error {
	switch {
	case object.IsNil(c.owner):
		return fmt.Errorf("%w: nil owner", ErrInvalidClaimer)
	case c.owner.GetUID() == "":
		return fmt.Errorf("%w: owner %s %s: %w", ErrInvalidClaimer, c.ownerGVK.Kind, objectName(c.owner), ErrMissingUID)
	case object.IsNil(c.patcher):
		return fmt.Errorf("%w: nil patcher for %s %s", ErrInvalidClaimer, c.ownerGVK.Kind, objectName(c.owner))
	case c.patchType != types.StrategicMergePatchType && c.patchType != types.MergePatchType:
		return fmt.Errorf("%w: patch type %q for %s %s; use %q or %q", ErrInvalidClaimer, c.patchType,
			c.ownerGVK.Kind, objectName(c.owner), types.StrategicMergePatchType, types.MergePatchType)
	}
	return nil
}

// CanAdopt runs the canAdopt function given to NewClaimer, once; later calls return the
// first answer. Adopt calls it, so callers rarely need to.
func (c *Claimer[T]) CanAdopt(ctx context.Context) error {
	c.canAdoptOne.Do(func() {
		if c.canAdopt != nil {
			c.canAdoptErr = c.canAdopt(ctx)
		}
	})
	return c.canAdoptErr
}

// ClaimObjects claims each object and returns those the owner now controls, in input order,
// as they were passed in (the cached objects, not the patched ones). Filters narrow the
// selector: an object matches when the selector and every filter accept it. Errors of
// individual adoptions and releases are aggregated (utilerrors.NewAggregate) and the other
// objects are still claimed; a controller should requeue the owner on error.
//
// Per object, in this order (kube-controller-manager's ClaimObject):
//  1. controlled by another owner (controller reference of another UID): ignored;
//  2. controlled by this owner and matching: kept, even while the owner is being deleted;
//  3. controlled by this owner, not matching: left alone while the owner is being deleted,
//     else released (a NotFound or Invalid answer means it is gone or replaced: not ours,
//     no error);
//  4. an orphan is not adopted when the owner is being deleted, when it does not match,
//     when it is being deleted itself, or when the owner is namespaced and the namespaces
//     differ;
//  5. otherwise it is adopted once canAdopt allowed it (NotFound: not ours, no error).
func (c *Claimer[T]) ClaimObjects(ctx context.Context, objs []T, filters ...func(T) bool) ([]T, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	var claimed []T
	var errs []error
	for i, obj := range objs {
		if object.IsNil(obj) {
			errs = append(errs, fmt.Errorf("%w at index %d of the objects claimed by %s %s", ErrNilObject, i, c.ownerGVK.Kind, objectName(c.owner)))
			continue
		}
		ok, err := c.claim(ctx, obj, filters)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			claimed = append(claimed, obj)
		}
	}
	return claimed, utilerrors.NewAggregate(errs)
}

// ClaimObject claims one object by the rules of ClaimObjects and reports whether the owner
// now controls it. A non-nil error means an adoption or release was attempted and failed.
func (c *Claimer[T]) ClaimObject(ctx context.Context, obj T, filters ...func(T) bool) (bool, error) {
	if err := c.validate(); err != nil {
		return false, err
	}
	if object.IsNil(obj) {
		return false, fmt.Errorf("%w claimed by %s %s", ErrNilObject, c.ownerGVK.Kind, objectName(c.owner))
	}
	return c.claim(ctx, obj, filters)
}

func (c *Claimer[T]) matches(obj T, filters []func(T) bool) bool {
	// Selector first, so filters run only on candidates.
	if !c.selector.Matches(labels.Set(obj.GetLabels())) {
		return false
	}
	for _, f := range filters {
		if f != nil && !f(obj) {
			return false
		}
	}
	return true
}

func (c *Claimer[T]) claim(ctx context.Context, obj T, filters []func(T) bool) (bool, error) {
	ownerDeleting := c.owner.GetDeletionTimestamp() != nil
	if ref := controllerOfNoCopy(obj); ref != nil {
		if ref.UID != c.owner.GetUID() {
			return false, nil // another controller's
		}
		if c.matches(obj, filters) {
			// Keeping what we own takes no write, so it is allowed while being deleted.
			return true, nil
		}
		if ownerDeleting {
			return false, nil
		}
		err := c.release(ctx, obj)
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
			return false, err
		}
		return false, nil
	}

	if ownerDeleting || !c.matches(obj, filters) {
		return false, nil
	}
	if obj.GetDeletionTimestamp() != nil {
		return false, nil // adopting a dying object would only make the owner wait for it
	}
	if ns := c.owner.GetNamespace(); ns != "" && ns != obj.GetNamespace() {
		return false, nil // a namespaced owner cannot own across namespaces
	}
	if err := c.Adopt(ctx, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// Adopt makes the owner the controller of obj, after CanAdopt allowed it. It does no
// selector or ownership checks (ClaimObjects does); the API server itself rejects the patch
// when obj already has another controller reference. Errors are *ClaimError.
func (c *Claimer[T]) Adopt(ctx context.Context, obj T) error {
	if err := c.validate(); err != nil {
		return err
	}
	if object.IsNil(obj) {
		return fmt.Errorf("%w adopted by %s %s", ErrNilObject, c.ownerGVK.Kind, objectName(c.owner))
	}
	if obj.GetUID() == "" {
		return c.claimError(OpAdopt, obj, errNoChildUID)
	}
	if err := c.CanAdopt(ctx); err != nil {
		return c.claimError(OpAdopt, obj, err)
	}
	data, err := adoptPatch(c.patchType, c.owner, c.ownerGVK, obj)
	if err != nil {
		return c.claimError(OpAdopt, obj, err)
	}
	klog.FromContext(ctx).V(2).Info("Adopting object", "object", klog.KObj(obj), "uid", obj.GetUID(),
		"owner", klog.KObj(c.owner), "ownerKind", c.ownerGVK.Kind)
	if err := c.patcher.Patch(ctx, obj.GetNamespace(), obj.GetName(), c.patchType, data); err != nil {
		return c.claimError(OpAdopt, obj, err)
	}
	return nil
}

// Release removes the owner's reference from obj. Unlike ClaimObjects it returns NotFound
// and Invalid answers (wrapped in *ClaimError) rather than ignoring them.
func (c *Claimer[T]) Release(ctx context.Context, obj T) error {
	if err := c.validate(); err != nil {
		return err
	}
	if object.IsNil(obj) {
		return fmt.Errorf("%w released by %s %s", ErrNilObject, c.ownerGVK.Kind, objectName(c.owner))
	}
	return c.release(ctx, obj)
}

func (c *Claimer[T]) release(ctx context.Context, obj T) error {
	if obj.GetUID() == "" {
		return c.claimError(OpRelease, obj, errNoChildUID)
	}
	data, err := releasePatch(c.patchType, c.owner, obj)
	if err != nil {
		return c.claimError(OpRelease, obj, err)
	}
	klog.FromContext(ctx).V(2).Info("Releasing object: removing its controller reference", "object", klog.KObj(obj),
		"uid", obj.GetUID(), "owner", klog.KObj(c.owner), "ownerKind", c.ownerGVK.Kind)
	if err := c.patcher.Patch(ctx, obj.GetNamespace(), obj.GetName(), c.patchType, data); err != nil {
		return c.claimError(OpRelease, obj, err)
	}
	return nil
}

// errNoChildUID refuses to patch a child without a UID: the patch's metadata.uid precondition
// would be empty, which the API server reads as no precondition at all.
var errNoChildUID = fmt.Errorf("%w: the object was not read from the API server, and a patch without its uid could change another object of the same name", ErrMissingUID)

func (c *Claimer[T]) claimError(op Op, obj T, err error) error {
	return &ClaimError{
		Op:        op,
		Object:    types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()},
		UID:       obj.GetUID(),
		OwnerKind: c.ownerGVK.Kind,
		Owner:     types.NamespacedName{Namespace: c.owner.GetNamespace(), Name: c.owner.GetName()},
		Err:       err,
	}
}
