package fakecluster

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clienttesting "k8s.io/client-go/testing"
)

// apply serves server-side apply (a patch of type application/apply-patch+yaml) as
// kube-apiserver does: the configuration is merged into the stored object (or into an empty one,
// creating it) by the API server's field manager, which records what the field manager of the
// request owns (operation Apply), removes what it applied before and applies no longer (unless
// another manager owns it too) and answers 409 Conflict when it would change a field another
// manager owns, unless forced. The merged object is then stored with create's or update's rules:
// server-assigned metadata, status kept or dropped per subresource, generation, and a
// resourceVersion in the configuration as a precondition.
func (c *Cluster) apply(gvr schema.GroupVersionResource, ki kindInfo, ns string, a clienttesting.PatchActionImpl) (runtime.Object, error) {
	sub := a.GetSubresource()
	switch {
	case sub == "status" && !ki.status:
		return nil, apierrors.NewNotFound(gvr.GroupResource(), "status")
	case sub != "" && sub != "status":
		return nil, unsupportedSubresource(gvr, sub)
	}
	cfg := &unstructured.Unstructured{Object: map[string]any{}}
	if err := utilyaml.Unmarshal(a.GetPatch(), &cfg.Object); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
	}
	if cfg.Object == nil {
		cfg.Object = map[string]any{}
	}
	if err := checkJSON(cfg.Object, ""); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
	}
	fm, err := fieldManager(ki, sub)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	force := a.PatchOptions.Force != nil && *a.PatchOptions.Force

	c.store.mu.Lock()
	defer c.store.mu.Unlock()
	stored, exists := c.store.getLocked(gvr, ns, a.GetName())
	if !exists && sub != "" {
		// Only the main resource creates on apply, as on the API server.
		return nil, apierrors.NewNotFound(gvr.GroupResource(), a.GetName())
	}
	live := stored
	if !exists {
		if live, err = (objectCreater{ki: ki}).New(ki.gvk); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
	}
	merged, err := fm.Apply(live, cfg, a.PatchOptions.FieldManager, force)
	if err != nil {
		return nil, applyError(err)
	}
	c.stampManagedFields(live, merged)
	obj, err := normalize(merged, ki)
	if err != nil {
		return nil, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	switch name := m.GetName(); {
	case name == "":
		m.SetName(a.GetName())
	case name != a.GetName():
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", name, a.GetName()))
	}
	if m.GetNamespace() == "" {
		m.SetNamespace(ns)
	}
	if m.GetNamespace() != ns {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the namespace of the provided object (%q) does not match the namespace sent on the request (%q)", m.GetNamespace(), ns))
	}
	if exists {
		return c.updateLocked(gvr, ki, ns, obj, sub, fieldOwner{applied: true})
	}
	// kube-apiserver ignores a resourceVersion in a configuration that creates.
	m.SetResourceVersion("")
	return c.createLocked(gvr, ki, ns, obj)
}

// applyError is the API status of a failed apply: the field manager's own (a Conflict listing
// the conflicts, a BadRequest for a configuration of another version or with managedFields), or,
// for a configuration the schema refuses (a field the kind lacks, a value of the wrong type),
// what kube-apiserver answers: 500 with no reason and the field manager's message naming the
// field ("failed to create typed patch object (...): .spec: field not declared in schema").
func applyError(err error) error {
	if _, ok := err.(apierrors.APIStatus); ok {
		return err
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Reason: metav1.StatusReasonUnknown,
		Message: err.Error(),
	}}
}
