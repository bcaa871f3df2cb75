package client

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// OperationResult says what CreateOrUpdate or CreateOrPatch did. The values complete the
// sentence "Deployment default/web has been ...", and are controller-runtime's.
type OperationResult string

const (
	// OperationResultNone: the object existed and mutate changed nothing; nothing was written.
	OperationResultNone OperationResult = "unchanged"
	// OperationResultCreated: the object did not exist and was created.
	OperationResultCreated OperationResult = "created"
	// OperationResultUpdated: the object existed and was updated (or patched).
	OperationResultUpdated OperationResult = "updated"
	// OperationResultUpdatedStatus: CreateOrPatch patched the object and its status.
	OperationResultUpdatedStatus OperationResult = "updatedStatus"
	// OperationResultUpdatedStatusOnly: CreateOrPatch patched only the status.
	OperationResultUpdatedStatusOnly OperationResult = "updatedStatusOnly"
)

// CreateOrUpdate makes the object named by obj's namespace and name look the way mutate says.
// It gets the object; when it does not exist, mutate is applied to obj and obj is created;
// otherwise obj is overwritten with the object read, mutate is applied, and the object is
// updated only when mutate changed something (apiequality.Semantic.DeepEqual), so a
// reconciler that calls it every sync writes only when the world differs. On success obj
// holds the object as the server stored it (or as read, when unchanged).
//
// mutate must set what the caller wants and leave the rest: obj holds the server's object when
// mutate runs, so fields the API server defaults are already filled (setting one to its empty
// value makes every call an update). It must not change the name or namespace (an error
// wrapping ErrKeyChanged). A resource with a status subresource ignores status changes in an
// update; use CreateOrPatch, which writes them through the subresource. A nil mutate only
// ensures the object exists. Conflicts are returned, not retried: requeue, or wrap the call
// in retry.RetryOnConflict. The name and behaviour are controller-runtime's
// controllerutil.CreateOrUpdate.
func CreateOrUpdate[T Object](ctx context.Context, c Client[T], obj T, mutate func(T) error) (OperationResult, error) {
	existing, created, err := readAndMutate(ctx, c, obj, mutate)
	if err != nil || created {
		return resultOf(created), err
	}
	if equality.Semantic.DeepEqual(existing, obj) {
		return OperationResultNone, nil
	}
	updated, err := c.Update(ctx, obj, metav1.UpdateOptions{})
	if err != nil {
		return OperationResultNone, err
	}
	return OperationResultUpdated, setObject(obj, updated)
}

// CreateOrPatchOption configures CreateOrPatch.
type CreateOrPatchOption func(*createOrPatchOptions)

type createOrPatchOptions struct{ lock bool }

// WithOptimisticLock makes CreateOrPatch's patches carry the resourceVersion the object was
// read at, so a write by someone else between the read and the patch makes the patch fail
// with a Conflict instead of being merged over. Use it when mutate computes new values from
// old ones (a counter, a list it appends to).
func WithOptimisticLock() CreateOrPatchOption {
	return func(o *createOrPatchOptions) { o.lock = true }
}

// CreateOrPatch is CreateOrUpdate with merge patches instead of an update: only the fields
// mutate changed are sent (a JSON merge patch between the object before and after mutate), so
// fields written by other clients meanwhile are kept. Status changes are patched through the
// status subresource, separately. The result tells which of the two were written. On success
// obj holds the object as the server stored it. The name and behaviour are
// controller-runtime's controllerutil.CreateOrPatch; WithOptimisticLock is ctrlkit's.
func CreateOrPatch[T Object](ctx context.Context, c Client[T], obj T, mutate func(T) error, opts ...CreateOrPatchOption) (OperationResult, error) {
	var o createOrPatchOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	existing, created, err := readAndMutate(ctx, c, obj, mutate)
	if err != nil || created {
		return resultOf(created), err
	}
	ns, name := obj.GetNamespace(), obj.GetName()
	before, err := runtime.DefaultUnstructuredConverter.ToUnstructured(existing)
	if err != nil {
		return OperationResultNone, fmt.Errorf("client: create or patch %s %s: encode: %w", resourceName(c.Resource()), objectKey(ns, name), err)
	}
	after, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return OperationResultNone, fmt.Errorf("client: create or patch %s %s: encode: %w", resourceName(c.Resource()), objectKey(ns, name), err)
	}
	beforeStatus, hadStatus := before["status"]
	afterStatus, hasStatus := after["status"]
	delete(before, "status")
	delete(after, "status")

	rv := ""
	if o.lock {
		rv = existing.GetResourceVersion()
	}
	result := OperationResultNone
	if !equality.Semantic.DeepEqual(before, after) {
		data, err := mergePatch(before, after, rv)
		if err != nil {
			return result, err
		}
		patched, err := c.Patch(ctx, ns, name, types.MergePatchType, data, metav1.PatchOptions{})
		if err != nil {
			return result, err
		}
		result = OperationResultUpdated
		if o.lock {
			// The status patch is checked against the write just made.
			rv = patched.GetResourceVersion()
		}
		if err := setObject(obj, patched); err != nil {
			return result, err
		}
	}
	if (hadStatus || hasStatus) && !equality.Semantic.DeepEqual(beforeStatus, afterStatus) {
		data, err := mergePatch(map[string]any{"status": beforeStatus}, map[string]any{"status": afterStatus}, rv)
		if err != nil {
			return result, err
		}
		patched, err := c.Patch(ctx, ns, name, types.MergePatchType, data, metav1.PatchOptions{}, "status")
		if err != nil {
			return result, err
		}
		if result == OperationResultUpdated {
			result = OperationResultUpdatedStatus
		} else {
			result = OperationResultUpdatedStatusOnly
		}
		if err := setObject(obj, patched); err != nil {
			return result, err
		}
	}
	return result, nil
}

// getOrCreate gets obj's object; when it does not exist it mutates obj, creates it and fills
// obj with the created object (created true).
func getOrCreate[T Object](ctx context.Context, c Client[T], obj T, mutate func(T) error) (cur T, created bool, err error) {
	var zero T
	if object.IsNil(c) {
		return zero, false, fmt.Errorf("client: create or update: nil client: %w", ErrInvalidInput)
	}
	if obj == zero || object.IsNil(obj) {
		return zero, false, fmt.Errorf("client: create or update %s: nil object: %w", resourceName(c.Resource()), ErrInvalidInput)
	}
	cur, err = c.Get(ctx, obj.GetNamespace(), obj.GetName(), metav1.GetOptions{})
	if err == nil {
		return cur, false, nil
	}
	if !apierrors.IsNotFound(err) {
		return zero, false, err
	}
	if err := runMutate(mutate, obj, obj); err != nil {
		return zero, false, err
	}
	stored, err := c.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return zero, false, err
	}
	return stored, true, setObject(obj, stored)
}

// readAndMutate is the first half of CreateOrUpdate and CreateOrPatch: it creates obj's
// object when it does not exist (created true), else fills obj with the stored object, runs
// mutate on it and returns a copy of the stored object to compare with.
func readAndMutate[T Object](ctx context.Context, c Client[T], obj T, mutate func(T) error) (existing T, created bool, err error) {
	cur, created, err := getOrCreate(ctx, c, obj, mutate)
	if err != nil || created {
		return existing, created, err
	}
	if existing, err = deepCopy(cur); err != nil {
		return existing, false, err
	}
	if err := setObject(obj, cur); err != nil {
		return existing, false, err
	}
	return existing, false, runMutate(mutate, obj, existing)
}

func resultOf(created bool) OperationResult {
	if created {
		return OperationResultCreated
	}
	return OperationResultNone
}

// runMutate calls mutate on obj and checks that it kept the name and namespace of key.
func runMutate[T Object](mutate func(T) error, obj T, key metav1.Object) error {
	if mutate == nil {
		return nil
	}
	ns, name := key.GetNamespace(), key.GetName()
	if err := mutate(obj); err != nil {
		return err
	}
	if obj.GetNamespace() != ns || obj.GetName() != name {
		return fmt.Errorf("client: mutate of %s changed it to %s: %w", objectKey(ns, name), objectKey(obj.GetNamespace(), obj.GetName()), ErrKeyChanged)
	}
	return nil
}

// deepCopy copies obj through its generated DeepCopyObject.
func deepCopy[T Object](obj T) (T, error) {
	var zero T
	if obj == zero || object.IsNil(obj) {
		return zero, fmt.Errorf("client: nil object: %w", ErrInvalidInput)
	}
	c, ok := obj.DeepCopyObject().(T)
	if !ok {
		return zero, fmt.Errorf("client: DeepCopyObject of %T returned another type: %w", obj, ErrInvalidInput)
	}
	return c, nil
}

// setObject makes *dst a shallow copy of *src, so the caller's obj holds what the server
// returned (src is ours: fresh from the server or a cached reader's copy).
func setObject[T Object](dst, src T) error {
	d, s := reflect.ValueOf(dst), reflect.ValueOf(src)
	if d.Kind() != reflect.Pointer || d.IsNil() || s.Kind() != reflect.Pointer || s.IsNil() {
		return fmt.Errorf("client: the client returned no object for %s: %w", objectKey(dst.GetNamespace(), dst.GetName()), ErrInvalidInput)
	}
	if d.Pointer() != s.Pointer() {
		d.Elem().Set(s.Elem())
	}
	return nil
}
