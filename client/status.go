package client

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// PatchStatus writes the status mutate gives obj, through the status subresource, when it
// differs from obj's: the status bookkeeping a controller otherwise writes by hand.
//
//	ps, res, err := client.PatchStatus(ctx, podsets, ps, func(ps *v1alpha1.PodSet) error {
//		ps.Status.ReadyReplicas = ready
//		meta.SetStatusCondition(&ps.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "AllReady"})
//		return nil
//	})
//
// It runs mutate on a deep copy of obj, which is never modified (pass the cache's object as
// it is). It then records that the status was computed for obj's metadata.generation: it sets
// status.observedGeneration when the status has an ObservedGeneration field (int64 or
// *int64), and the ObservedGeneration of every condition when it has a Conditions field of
// []metav1.Condition. The status is then compared with obj's (apiequality.Semantic.DeepEqual):
// equal, nothing is sent and the result is OperationResultNone; different, a JSON merge patch
// of the difference between the two statuses goes to the status subresource and the result is
// OperationResultUpdatedStatusOnly (CreateOrPatch's name for a write of the status alone).
// Changes mutate makes outside the status are not sent (CreateOrPatch writes those).
//
// Set conditions with apimachinery's meta.SetStatusCondition: it keeps a condition's
// lastTransitionTime while its status stays the same, so an unchanged world gives an equal
// status and no write (pass LastTransitionTime from your own clock to control the time).
// A condition built from scratch with a new time on every pass is written every time.
//
// The patch carries no resourceVersion: the controller owns its object's status, and a
// precondition would turn every pass that runs on a cache lagging behind the last write into a
// Conflict and a retry. It sends only the fields that differ from obj's status, so fields obj
// agrees with are left as the server has them; when the cache lagged, the reconcile its next
// event triggers writes what is still missing. The request goes through c.Patch, so with a
// controller's Options.Fences.Auto the write fences the key like every other write through a
// ctrlkit client.
//
// It returns the object as the server stored it after the write, or obj itself when nothing
// was sent (also on an error). A NotFound error means the object is gone (IgnoreNotFound), or
// that the resource has no status subresource. A T without a Status field (a ConfigMap) is an
// error naming the type and wrapping ErrNoStatus; a nil client or object, ErrInvalidInput;
// mutate's own error is returned as it is, and a mutate that changes the name or namespace is
// ErrKeyChanged. c may be a client For returns, a *customresource.Client or a cached client.
//
// The name says what goes over the wire, next to PatchObject and CreateOrPatch:
// controller-runtime's equivalent is c.Status().Patch(ctx, obj, client.MergeFrom(original)),
// here with the copy, the comparison and observedGeneration done for you.
func PatchStatus[T Object](ctx context.Context, c Client[T], obj T, mutate func(T) error) (T, OperationResult, error) {
	var zero T
	if object.IsNil(c) {
		return obj, OperationResultNone, fmt.Errorf("client: patch status: nil client: %w", ErrInvalidInput)
	}
	if obj == zero || object.IsNil(obj) {
		return obj, OperationResultNone, fmt.Errorf("client: patch status of %s: nil object: %w", resourceName(c.Resource()), ErrInvalidInput)
	}
	ns, name := obj.GetNamespace(), obj.GetName()
	layout, err := statusLayoutOf(reflect.TypeOf(obj))
	if err != nil {
		return obj, OperationResultNone, fmt.Errorf("client: patch status of %s %s: %w", resourceName(c.Resource()), objectKey(ns, name), err)
	}
	next, err := deepCopy(obj)
	if err != nil {
		return obj, OperationResultNone, err
	}
	if err := runMutate(mutate, next, obj); err != nil {
		return obj, OperationResultNone, err
	}
	before, after, err := layout.statuses(obj, next)
	if err != nil {
		return obj, OperationResultNone, fmt.Errorf("client: patch status of %s %s: %w", resourceName(c.Resource()), objectKey(ns, name), err)
	}
	if equality.Semantic.DeepEqual(before, after) {
		return obj, OperationResultNone, nil
	}
	data, err := mergePatch(map[string]any{"status": before}, map[string]any{"status": after}, "")
	if err != nil {
		return obj, OperationResultNone, err
	}
	if string(data) == "{}" {
		// Semantically different but the same JSON (times apart by less than a second): the
		// server would store what it has.
		return obj, OperationResultNone, nil
	}
	out, err := c.Patch(ctx, ns, name, types.MergePatchType, data, metav1.PatchOptions{}, "status")
	if err != nil {
		return obj, OperationResultNone, err
	}
	return out, OperationResultUpdatedStatusOnly, nil
}
