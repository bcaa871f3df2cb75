package fakecluster

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// applySchema prunes, defaults and validates obj, the JSON fields of a custom resource about to
// be stored, with the schema of its kind, as the API server decodes and validates a write. old
// is the stored object on an update (nil on a create): a value unchanged from old is not
// validated again, as the server's validation ratcheting does. status says the write is one to
// the status subresource, which validates only the status. Kinds without a schema cost one nil
// check. An update of a CRD serves its resources as it now declares them, schemas included.
func (c *Cluster) applySchema(ki kindInfo, obj, old map[string]any, status bool) error {
	s := ki.schema
	if s == nil {
		if ki.crd && !status {
			// An updated CRD is served as it now reads, its schemas included.
			_, err := c.declareCRD(&unstructured.Unstructured{Object: obj})
			return err
		}
		return nil
	}
	pruneAndDefault(obj, s)
	var errs field.ErrorList
	if status {
		if st, ok := obj["status"]; ok {
			if ss := s.properties["status"]; ss != nil {
				oldStatus, hasOld := old["status"]
				errs = validator{trim: "status."}.validateValue(field.NewPath("status"), st, ss, oldStatus, hasOld && old != nil)
			}
		}
	} else {
		errs = validator{}.validateValue(nil, obj, s, old, old != nil)
	}
	if len(errs) == 0 {
		return nil
	}
	name := ""
	if md, ok := obj["metadata"].(map[string]any); ok {
		name, _ = md["name"].(string)
	}
	return apierrors.NewInvalid(ki.gvk.GroupKind(), name, errs)
}

// pruneAndDefault prunes obj (a custom resource's JSON fields) by s and fills in its defaults,
// as the API server decodes a request's body or a stored object.
func pruneAndDefault(obj map[string]any, s *structural) {
	coerceRoot(obj, s, true)
	defaultValue(obj, s)
}

// coerceRoot prunes x, a resource (the stored object, or an embedded resource when root is
// false): apiVersion, kind and metadata are kept, metadata reduced to the fields ObjectMeta
// has; everything else is pruned by s.
func coerceRoot(x map[string]any, s *structural, root bool) {
	for k, v := range x {
		switch k {
		case "apiVersion", "kind":
			continue
		case "metadata":
			if md, ok := v.(map[string]any); ok {
				x[k] = coerceMetadata(md)
			}
			continue
		}
		pruneField(x, k, v, s)
	}
}

// pruneField prunes the field k (value v) of the object x under schema s.
func pruneField(x map[string]any, k string, v any, s *structural) {
	ps := s.properties[k]
	if ps == nil {
		ps = s.additional
	}
	if ps == nil {
		if !s.preserveUnknown && !s.anyExtra {
			delete(x, k)
		}
		return
	}
	if isNull(v) {
		v, x[k] = nil, nil // a nil map or slice is JSON's null
	}
	if v == nil && !ps.nullable && !ps.hasDef {
		delete(x, k) // a null the field cannot hold and no default replaces
		return
	}
	prune(v, ps)
}

// prune removes from v what s does not specify, unless s preserves unknown fields.
func prune(v any, s *structural) {
	switch x := v.(type) {
	case map[string]any:
		if s.embedded {
			coerceRoot(x, s, false)
			return
		}
		for k, e := range x {
			pruneField(x, k, e, s)
		}
	case []any:
		if s.items == nil {
			return
		}
		for i, e := range x {
			if isNull(e) {
				x[i] = nil
				continue
			}
			prune(e, s.items)
		}
	}
}

// coerceMetadata keeps the fields of md that ObjectMeta has, dropping unknown and malformed
// ones, as the API server decodes a custom resource's (or an embedded resource's) metadata.
func coerceMetadata(md map[string]any) map[string]any {
	var om metav1.ObjectMeta
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(md, &om); err != nil {
		// Drop the malformed fields one by one.
		om = metav1.ObjectMeta{}
		for k, v := range md {
			if runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{k: v}, &om) != nil {
				delete(md, k)
			}
		}
		if runtime.DefaultUnstructuredConverter.FromUnstructured(md, &om) != nil {
			return map[string]any{}
		}
	}
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&om)
	if err != nil {
		return md
	}
	return out
}

// isNull reports whether v is JSON's null: nil, or a nil map or slice, which encode as null.
func isNull(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return x == nil
	case []any:
		return x == nil
	}
	return false
}

// defaultValue fills in the defaults s specifies under v: absent fields, and nulls of fields
// that are not nullable.
func defaultValue(v any, s *structural) {
	switch x := v.(type) {
	case map[string]any:
		for k, p := range s.properties {
			if !p.hasDef {
				continue
			}
			if e, found := x[k]; !found || (e == nil && !p.nullable) {
				x[k] = runtime.DeepCopyJSONValue(p.def)
			}
		}
		for k, e := range x {
			if p, ok := s.properties[k]; ok {
				defaultValue(e, p)
			} else if a := s.additional; a != nil {
				if e == nil && !a.nullable && a.hasDef {
					x[k] = runtime.DeepCopyJSONValue(a.def)
				}
				defaultValue(x[k], a)
			}
		}
	case []any:
		if s.items == nil {
			return
		}
		for i, e := range x {
			if e == nil && !s.items.nullable && s.items.hasDef {
				x[i] = runtime.DeepCopyJSONValue(s.items.def)
			}
			defaultValue(x[i], s.items)
		}
	}
}
