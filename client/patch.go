package client

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// Patch computes the body of a patch request for an object: Type is the patch type, Data the
// body that turns the server's object into obj.
type Patch[T Object] interface {
	Type() types.PatchType
	Data(obj T) ([]byte, error)
}

// MergeFrom returns a JSON merge patch (RFC 7386) from original to whatever obj Data is given:
// only the fields that differ are sent, so concurrent writers of other fields are not
// overwritten. Take original as a DeepCopy before changing the object. Lists are replaced
// whole, as merge patches do. The name follows controller-runtime's client.MergeFrom.
func MergeFrom[T Object](original T) Patch[T] {
	return &mergeFrom[T]{original: original}
}

// MergeFromWithOptimisticLock is MergeFrom with original's resourceVersion in the patch: the
// API server refuses it with a Conflict when the object changed since original was read, so
// a patch computed from a stale read cannot silently win.
func MergeFromWithOptimisticLock[T Object](original T) Patch[T] {
	return &mergeFrom[T]{original: original, lock: true}
}

type mergeFrom[T Object] struct {
	original T
	lock     bool
}

func (p *mergeFrom[T]) Type() types.PatchType { return types.MergePatchType }

func (p *mergeFrom[T]) Data(obj T) ([]byte, error) {
	var zero T
	if p.original == zero || object.IsNil(p.original) || obj == zero || object.IsNil(obj) {
		return nil, fmt.Errorf("client: merge patch: nil object: %w", ErrInvalidInput)
	}
	var rv string
	if p.lock {
		rv = p.original.GetResourceVersion()
		if rv == "" {
			return nil, fmt.Errorf("client: merge patch of %s: optimistic lock needs the original's resourceVersion: %w", objectKey(obj.GetNamespace(), obj.GetName()), ErrInvalidInput)
		}
	}
	return mergePatch(p.original, obj, rv)
}

// mergePatch returns the merge patch from original to modified, with metadata.resourceVersion
// set to rv when rv is not empty (even when nothing else changed, so the lock is checked).
func mergePatch(original, modified any, rv string) ([]byte, error) {
	before, err := json.Marshal(original)
	if err != nil {
		return nil, fmt.Errorf("client: merge patch: encode original: %w", err)
	}
	after, err := json.Marshal(modified)
	if err != nil {
		return nil, fmt.Errorf("client: merge patch: encode object: %w", err)
	}
	data, err := jsonpatch.CreateMergePatch(before, after)
	if err != nil {
		return nil, fmt.Errorf("client: merge patch: %w", err)
	}
	if rv == "" {
		return data, nil
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("client: merge patch: %w", err)
	}
	md, _ := m["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
	}
	md["resourceVersion"] = rv
	m["metadata"] = md
	return json.Marshal(m)
}

// PatchObject sends patch, computed for obj, to obj's object (or to one of its subresources)
// and returns the object as the server stored it: the counterpart of controller-runtime's
// c.Patch(ctx, obj, patch).
func PatchObject[T Object](ctx context.Context, c Client[T], obj T, patch Patch[T], opts metav1.PatchOptions, subresources ...string) (T, error) {
	var zero T
	if object.IsNil(c) || patch == nil || obj == zero || object.IsNil(obj) {
		return zero, fmt.Errorf("client: patch: nil client, patch or object: %w", ErrInvalidInput)
	}
	data, err := patch.Data(obj)
	if err != nil {
		return zero, err
	}
	return c.Patch(ctx, obj.GetNamespace(), obj.GetName(), patch.Type(), data, opts, subresources...)
}
