package fakecluster

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	clienttesting "k8s.io/client-go/testing"
)

// patch applies a JSON, merge or strategic-merge patch to the stored object and stores the
// result with update's rules. A resourceVersion or UID in the patch is a precondition, as on the
// API server. Custom resources take no strategic merge patch (415, as from an API server). An
// apply patch is server-side apply (apply.go).
func (c *Cluster) patch(gvr schema.GroupVersionResource, ki kindInfo, ns string, a clienttesting.PatchActionImpl) (runtime.Object, error) {
	pt := a.GetPatchType()
	if errs := metav1validation.ValidatePatchOptions(&a.PatchOptions, pt); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}, "", errs)
	}
	if pt == types.ApplyPatchType {
		return c.apply(gvr, ki, ns, a)
	}
	if pt == types.StrategicMergePatchType && !ki.typed {
		return nil, unsupportedMediaType(pt)
	}
	switch sub := a.GetSubresource(); {
	case sub == "status" && !ki.status:
		return nil, apierrors.NewNotFound(gvr.GroupResource(), "status")
	case sub != "" && sub != "status":
		return nil, unsupportedSubresource(gvr, sub)
	}
	// Read, patch and write under one lock, so that a patch without a resourceVersion never
	// conflicts (the API server retries such patches internally).
	c.store.mu.Lock()
	defer c.store.mu.Unlock()
	stored, ok := c.store.getLocked(gvr, ns, a.GetName())
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), a.GetName())
	}
	old, err := json.Marshal(stored)
	if err != nil {
		return nil, err
	}
	var schemaObj any
	if ki.typed {
		schemaObj = reflect.New(reflect.TypeOf(stored).Elem()).Interface()
	}
	modified, err := applyPatch(pt, old, a.GetPatch(), schemaObj)
	if err != nil {
		return nil, err
	}
	var result runtime.Object
	if ki.typed {
		result = reflect.New(reflect.TypeOf(stored).Elem()).Interface().(runtime.Object)
		if err := json.Unmarshal(modified, result); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	} else {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(modified); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		result = u
	}
	// The patched object carries the stored resourceVersion unless the patch set another, so
	// update's precondition check is the patch's.
	return c.updateLocked(gvr, ki, ns, result, a.GetSubresource(), fieldOwner{manager: c.managerName(a.PatchOptions.FieldManager)})
}

func unsupportedMediaType(pt types.PatchType) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s, %s",
			types.JSONPatchType, types.MergePatchType, types.ApplyPatchType),
	}}
}

// applyPatch applies a JSON, merge or strategic-merge patch to the JSON document old; schema is
// the Go type strategic merge reads its list semantics from. A patch that does not decode or
// apply is a BadRequest.
func applyPatch(pt types.PatchType, old, patch []byte, schemaObj any) ([]byte, error) {
	var (
		modified []byte
		err      error
	)
	switch pt {
	case types.JSONPatchType:
		p, derr := jsonpatch.DecodePatch(patch)
		if derr != nil {
			return nil, apierrors.NewBadRequest(derr.Error())
		}
		modified, err = p.Apply(old)
	case types.MergePatchType:
		modified, err = jsonpatch.MergePatch(old, patch)
	case types.StrategicMergePatchType:
		if schemaObj == nil {
			return nil, unsupportedMediaType(pt)
		}
		modified, err = strategicpatch.StrategicMergePatch(old, patch, schemaObj)
	default:
		return nil, unsupportedMediaType(pt)
	}
	switch {
	case err != nil && pt == types.JSONPatchType:
		// A patch that decodes but does not apply (a failed test, a missing path) is a 422,
		// as kube-apiserver answers it.
		return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
	case err != nil:
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return modified, nil
}
