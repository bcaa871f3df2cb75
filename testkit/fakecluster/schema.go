package fakecluster

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/netip"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file applies a CustomResourceDefinition's structural schema (a version's
// openAPIV3Schema) to the custom resources the cluster stores, as kube-apiserver's
// apiextensions code does: on every write the object is pruned of fields the schema does not
// know, nulls of non-nullable fields without a default are dropped, defaults are filled in, and
// the result is validated, a 422 Invalid naming each failing field as the server does.
// CEL rules (x-kubernetes-validations) and the logical junctors (allOf, anyOf, oneOf, not) are
// not evaluated.
//
// It is ctrlkit's own code rather than k8s.io/apiextensions-apiserver's: that module's
// defaulting and validation packages import CEL (github.com/google/cel-go), k8s.io/apiserver
// and component-base's feature gates and metrics, about 130 packages more for every test binary
// that uses testkit.

// structural is one node of a structural schema: what pruning, defaulting and validation read.
type structural struct {
	typ             string
	nullable        bool
	format          string
	intOrString     bool
	preserveUnknown bool
	embedded        bool

	properties map[string]*structural
	additional *structural // additionalProperties as a schema
	anyExtra   bool        // additionalProperties: true
	items      *structural

	required []string
	def      any
	hasDef   bool
	enum     []any

	minimum, maximum                   *float64
	exclusiveMinimum, exclusiveMaximum bool
	multipleOf                         *float64
	minLength, maxLength               *int64
	minItems, maxItems                 *int64
	minProperties, maxProperties       *int64
	pattern                            *regexp.Regexp
	patternText                        string

	listType    string
	listMapKeys []string
}

// parseSchema reads an openAPIV3Schema (JSON fields) into a structural schema, refusing one that
// is not structural with field errors under path, as the API server refuses such a CRD.
func parseSchema(raw map[string]any, path *field.Path) (*structural, field.ErrorList) {
	s, errs := parseNode(raw, path, false)
	if len(errs) == 0 && s.typ == "" && !s.preserveUnknown {
		errs = append(errs, field.Required(path.Child("type"), "must not be empty at the root"))
	}
	if len(errs) == 0 && s.typ != "" && s.typ != "object" {
		errs = append(errs, field.Invalid(path.Child("type"), s.typ, "must be object at the root"))
	}
	return s, errs
}

var schemaTypes = []string{"array", "boolean", "integer", "number", "object", "string"}

func parseNode(raw map[string]any, path *field.Path, inJunctor bool) (*structural, field.ErrorList) {
	s := &structural{}
	var errs field.ErrorList
	str := func(k string) string { v, _ := raw[k].(string); return v }
	boolean := func(k string) bool { v, _ := raw[k].(bool); return v }
	num := func(k string) *float64 {
		switch v := raw[k].(type) {
		case int64:
			f := float64(v)
			return &f
		case float64:
			return &v
		case json.Number:
			f, err := v.Float64()
			if err != nil {
				errs = append(errs, field.Invalid(path.Child(k), v, "must be a number"))
				return nil
			}
			return &f
		}
		return nil
	}
	count := func(k string) *int64 {
		if f := num(k); f != nil {
			n := int64(*f)
			return &n
		}
		return nil
	}
	if _, ok := raw["$ref"]; ok {
		errs = append(errs, field.Forbidden(path.Child("$ref"), "$ref is not supported"))
	}
	s.typ = str("type")
	if s.typ != "" && !slices.Contains(schemaTypes, s.typ) {
		errs = append(errs, field.NotSupported(path.Child("type"), s.typ, schemaTypes))
	}
	s.nullable = boolean("nullable")
	s.format = str("format")
	s.intOrString = boolean("x-kubernetes-int-or-string")
	s.preserveUnknown = boolean("x-kubernetes-preserve-unknown-fields")
	s.embedded = boolean("x-kubernetes-embedded-resource")
	if s.embedded && s.typ != "object" {
		errs = append(errs, field.Required(path.Child("type"), "must be object if x-kubernetes-embedded-resource is true"))
	}
	if props, ok := raw["properties"].(map[string]any); ok {
		s.properties = make(map[string]*structural, len(props))
		for _, k := range sortedKeys(props) {
			p, _ := props[k].(map[string]any)
			child, cerrs := parseNode(p, path.Child("properties").Key(k), inJunctor)
			errs = append(errs, cerrs...)
			if !inJunctor && child.typ == "" && !child.intOrString && !child.preserveUnknown {
				errs = append(errs, field.Required(path.Child("properties").Key(k).Child("type"), "must not be empty for specified object fields"))
			}
			s.properties[k] = child
		}
	}
	switch ap := raw["additionalProperties"].(type) {
	case bool:
		s.anyExtra = ap
	case map[string]any:
		child, cerrs := parseNode(ap, path.Child("additionalProperties"), inJunctor)
		errs = append(errs, cerrs...)
		if !inJunctor && child.typ == "" && !child.intOrString && !child.preserveUnknown {
			errs = append(errs, field.Required(path.Child("additionalProperties", "type"), "must not be empty for specified object fields"))
		}
		s.additional = child
	}
	if s.properties != nil && (s.additional != nil || s.anyExtra) {
		errs = append(errs, field.Forbidden(path.Child("additionalProperties"), "additionalProperties and properties are mutual exclusive"))
	}
	if it, ok := raw["items"].(map[string]any); ok {
		child, cerrs := parseNode(it, path.Child("items"), inJunctor)
		errs = append(errs, cerrs...)
		if !inJunctor && child.typ == "" && !child.intOrString && !child.preserveUnknown {
			errs = append(errs, field.Required(path.Child("items", "type"), "must not be empty for specified array items"))
		}
		s.items = child
	} else if _, ok := raw["items"]; ok {
		errs = append(errs, field.Forbidden(path.Child("items"), "items must be a schema object and not an array"))
	} else if s.typ == "array" && !inJunctor {
		errs = append(errs, field.Required(path.Child("items"), "must be specified"))
	}
	// The junctors' schemas must be structural too, but are not evaluated.
	for _, j := range []string{"allOf", "anyOf", "oneOf"} {
		list, _ := raw[j].([]any)
		for i, e := range list {
			m, _ := e.(map[string]any)
			_, cerrs := parseNode(m, path.Child(j).Index(i), true)
			errs = append(errs, cerrs...)
		}
	}
	if m, ok := raw["not"].(map[string]any); ok {
		_, cerrs := parseNode(m, path.Child("not"), true)
		errs = append(errs, cerrs...)
	}
	if req, ok := raw["required"].([]any); ok {
		for _, r := range req {
			if k, ok := r.(string); ok {
				s.required = append(s.required, k)
			}
		}
	}
	if d, ok := raw["default"]; ok {
		s.def, s.hasDef = jsonInts(runtime.DeepCopyJSONValue(d)), true
	}
	if e, ok := raw["enum"].([]any); ok {
		s.enum = e
	}
	s.minimum, s.maximum, s.multipleOf = num("minimum"), num("maximum"), num("multipleOf")
	s.exclusiveMinimum, s.exclusiveMaximum = boolean("exclusiveMinimum"), boolean("exclusiveMaximum")
	s.minLength, s.maxLength = count("minLength"), count("maxLength")
	s.minItems, s.maxItems = count("minItems"), count("maxItems")
	s.minProperties, s.maxProperties = count("minProperties"), count("maxProperties")
	if p := str("pattern"); p != "" {
		re, err := regexp.Compile(p)
		if err != nil {
			errs = append(errs, field.Invalid(path.Child("pattern"), p, "must be a valid regular expression, but isn't"))
		}
		s.pattern, s.patternText = re, p
	}
	s.listType = str("x-kubernetes-list-type")
	if keys, ok := raw["x-kubernetes-list-map-keys"].([]any); ok {
		for _, k := range keys {
			if ks, ok := k.(string); ok {
				s.listMapKeys = append(s.listMapKeys, ks)
			}
		}
	}
	return s, errs
}

// jsonInts turns whole float64 numbers under v into int64, as the API server's JSON decoding
// has them: a schema decoded from YAML carries float64s, and defaults must be stored as the
// server stores them.
func jsonInts(v any) any {
	switch x := v.(type) {
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<63 {
			return int64(x)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = jsonInts(e)
		}
	case []any:
		for i, e := range x {
			x[i] = jsonInts(e)
		}
	}
	return v
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

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

// validator validates values against a structural schema. Its messages name a field relative
// to the validated root (trim is the root's path and a dot: "status." for a status update),
// as the server's do.
type validator struct{ trim string }

func (vd validator) name(path *field.Path) string {
	return strings.TrimPrefix(path.String(), vd.trim)
}

// validateValue validates v at path against s. old is the stored value at the same place on an
// update (hasOld): a value equal to it is not validated again (ratcheting).
func (vd validator) validateValue(path *field.Path, v any, s *structural, old any, hasOld bool) field.ErrorList {
	if hasOld && reflect.DeepEqual(v, old) {
		return nil
	}
	name := vd.name(path)
	if v == nil {
		if s.nullable || (s.typ == "" && !s.intOrString) {
			return nil
		}
		typ := s.typ
		if s.intOrString {
			typ = "integer,string"
		}
		return field.ErrorList{field.TypeInvalid(path, "", fmt.Sprintf("%s in body must be of type %s: %q", name, typ, "null"))}
	}
	kind := jsonType(v)
	var errs field.ErrorList
	typeOK := true
	switch {
	case s.intOrString:
		if kind != "integer" && kind != "string" {
			typeOK = false
			errs = append(errs, field.TypeInvalid(path, kind, fmt.Sprintf("%s in body must be of type integer,string: %q", name, kind)))
		}
	case s.typ == "":
	case s.typ == kind, s.typ == "number" && kind == "integer":
	default:
		typeOK = false
		want, got := s.typ, kind
		switch v.(type) {
		case float64, int64, bool:
			if s.format != "" {
				// The server's validator names the format and the decoded Go type then.
				want, got = s.format, fmt.Sprintf("%T", v)
			}
		}
		errs = append(errs, field.TypeInvalid(path, got, fmt.Sprintf("%s in body must be of type %s: %q", name, want, got)))
	}
	if len(s.enum) > 0 && !slices.ContainsFunc(s.enum, func(e any) bool { return jsonEqual(e, v) }) {
		values := make([]string, 0, len(s.enum))
		for _, e := range s.enum {
			if es, ok := e.(string); ok {
				values = append(values, es)
			} else {
				b, _ := json.Marshal(e)
				values = append(values, string(b))
			}
		}
		errs = append(errs, field.NotSupported(path, v, values))
	}
	if !typeOK {
		// As the server's validator, which checks the type and then whatever else applies to
		// the value: its enum, and number bounds.
		if _, isNum := toFloat(v); isNum {
			errs = append(errs, vd.validateNumber(path, v, s)...)
		}
		return errs
	}
	switch x := v.(type) {
	case string:
		errs = append(errs, vd.validateString(path, x, s)...)
	case int64, float64, json.Number:
		errs = append(errs, vd.validateNumber(path, v, s)...)
	case []any:
		errs = append(errs, vd.validateArray(path, x, s, old, hasOld)...)
	case map[string]any:
		errs = append(errs, vd.validateObject(path, x, s, old, hasOld)...)
	}
	return errs
}

func (vd validator) validateString(path *field.Path, x string, s *structural) field.ErrorList {
	var errs field.ErrorList
	name := vd.name(path)
	n := int64(utf8.RuneCountInString(x))
	// Length and pattern report the first failure only, as the server's validator does.
	switch {
	case s.maxLength != nil && n > *s.maxLength:
		errs = append(errs, field.TooLong(path, "", int(*s.maxLength)))
	case s.minLength != nil && n < *s.minLength:
		errs = append(errs, field.Invalid(path, x, fmt.Sprintf("%s in body should be at least %d chars long", name, *s.minLength)))
	case s.pattern != nil && !s.pattern.MatchString(x):
		errs = append(errs, field.Invalid(path, x, fmt.Sprintf("%s in body should match '%s'", name, s.patternText)))
	}
	if s.format != "" && !validFormat(s.format, x) {
		errs = append(errs, field.TypeInvalid(path, x, fmt.Sprintf("%s in body must be of type %s: %q", name, s.format, x)))
	}
	return errs
}

func (vd validator) validateNumber(path *field.Path, v any, s *structural) field.ErrorList {
	f, ok := toFloat(v)
	if !ok {
		return nil
	}
	var errs field.ErrorList
	name := vd.name(path)
	if s.typ == "integer" && (s.maximum != nil || s.minimum != nil || s.multipleOf != nil) && !inIntegerRange(f, s.format) {
		// The server's range check, which reports no field path.
		format := "(default format)"
		if s.format != "" {
			format = "with format " + s.format
		}
		errs = append(errs, field.Invalid(nil, "", fmt.Sprintf("Checked value must be of type integer %s in %s", format, name)))
	}
	if m := s.maximum; m != nil {
		if s.exclusiveMaximum && f >= *m {
			errs = append(errs, field.Invalid(path, v, fmt.Sprintf("%s in body should be less than %v", name, *m)))
		} else if !s.exclusiveMaximum && f > *m {
			errs = append(errs, field.Invalid(path, v, fmt.Sprintf("%s in body should be less than or equal to %v", name, *m)))
		}
	}
	if m := s.minimum; m != nil {
		if s.exclusiveMinimum && f <= *m {
			errs = append(errs, field.Invalid(path, v, fmt.Sprintf("%s in body should be greater than %v", name, *m)))
		} else if !s.exclusiveMinimum && f < *m {
			errs = append(errs, field.Invalid(path, v, fmt.Sprintf("%s in body should be greater than or equal to %v", name, *m)))
		}
	}
	if m := s.multipleOf; m != nil && *m > 0 {
		if q := f / *m; q != math.Trunc(q) {
			errs = append(errs, field.Invalid(path, v, fmt.Sprintf("%s in body should be a multiple of %v", name, *m)))
		}
	}
	return errs
}

func (vd validator) validateArray(path *field.Path, x []any, s *structural, old any, hasOld bool) field.ErrorList {
	var errs field.ErrorList
	name := vd.name(path)
	n := int64(len(x))
	if s.maxItems != nil && n > *s.maxItems {
		errs = append(errs, field.TooMany(path, int(n), int(*s.maxItems)))
	}
	if s.minItems != nil && n < *s.minItems {
		errs = append(errs, field.Invalid(path, n, fmt.Sprintf("%s in body should have at least %d items", name, *s.minItems)))
	}
	if s.items == nil {
		return errs
	}
	oldList, _ := old.([]any)
	for i, e := range x {
		// Correlate an item with its old self where the list type allows it (sets by value,
		// maps by key), as ratcheting does; atomic lists are not correlated.
		var oe any
		found := false
		switch s.listType {
		case "set":
			found = hasOld && slices.ContainsFunc(oldList, func(o any) bool { return reflect.DeepEqual(o, e) })
			oe = e
		case "map":
			if hasOld {
				oe, found = findByKeys(oldList, e, s.listMapKeys)
			}
		}
		errs = append(errs, vd.validateValue(path.Index(i), e, s.items, oe, found)...)
	}
	errs = append(errs, vd.validateListType(path, x, s, oldList, hasOld)...)
	return errs
}

// validateListType reports duplicates in a set or a map list, unless the old list had them
// too.
func (vd validator) validateListType(path *field.Path, x []any, s *structural, old []any, hasOld bool) field.ErrorList {
	dups := func(list []any) field.ErrorList {
		var errs field.ErrorList
		switch s.listType {
		case "set":
			for i := range list {
				if slices.ContainsFunc(list[:i], func(o any) bool { return jsonEqual(o, list[i]) }) {
					errs = append(errs, field.Duplicate(path.Index(i), list[i]))
				}
			}
		case "map":
			for i := range list {
				k := mapKeys(list[i], s.listMapKeys)
				if slices.ContainsFunc(list[:i], func(o any) bool { return jsonEqual(mapKeys(o, s.listMapKeys), k) }) {
					errs = append(errs, field.Duplicate(path.Index(i), k))
				}
			}
		}
		return errs
	}
	errs := dups(x)
	if len(errs) > 0 && hasOld && len(dups(old)) > 0 {
		return nil
	}
	return errs
}

func mapKeys(item any, keys []string) map[string]any {
	m, _ := item.(map[string]any)
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

func findByKeys(list []any, item any, keys []string) (any, bool) {
	k := mapKeys(item, keys)
	for _, o := range list {
		if jsonEqual(mapKeys(o, keys), k) {
			return o, true
		}
	}
	return nil, false
}

func (vd validator) validateObject(path *field.Path, x map[string]any, s *structural, old any, hasOld bool) field.ErrorList {
	var errs field.ErrorList
	name := vd.name(path)
	n := int64(len(x))
	if s.maxProperties != nil && n > *s.maxProperties {
		errs = append(errs, field.TooMany(path, int(n), int(*s.maxProperties)))
	}
	if s.minProperties != nil && n < *s.minProperties {
		errs = append(errs, field.Invalid(path, n, fmt.Sprintf("%s in body should have at least %d properties", name, *s.minProperties)))
	}
	oldMap, _ := old.(map[string]any)
	for _, k := range sortedKeys(x) {
		ps := s.properties[k]
		if ps == nil {
			ps = s.additional
		}
		if ps == nil {
			continue
		}
		if path == nil && (k == "metadata" || k == "apiVersion" || k == "kind") {
			continue // the server's own rules, not the schema's
		}
		oe, found := oldMap[k]
		errs = append(errs, vd.validateValue(path.Child(k), x[k], ps, oe, found && hasOld)...)
	}
	for _, k := range s.required {
		if _, ok := x[k]; !ok {
			errs = append(errs, field.Required(path.Child(k), ""))
		}
	}
	if s.embedded {
		for _, k := range []string{"apiVersion", "kind"} {
			switch v, found := x[k]; {
			case !found:
				errs = append(errs, field.Required(path.Child(k), ""))
			case v == "":
				errs = append(errs, field.Invalid(path.Child(k), v, "must not be empty"))
			}
		}
	}
	return errs
}

// jsonType is the JSON schema type of a decoded JSON value; a float without a fraction is an
// integer, as the server's decoder would have made it.
func jsonType(v any) string {
	switch x := v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64:
		return "integer"
	case float64:
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			return "integer"
		}
		return "number"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// inIntegerRange reports whether f is an integer that format (int32, uint32, uint64, or int64
// by default) holds.
func inIntegerRange(f float64, format string) bool {
	if f != math.Trunc(f) {
		return false
	}
	switch format {
	case "int32":
		return f >= math.MinInt32 && f <= math.MaxInt32
	case "uint32":
		return f >= 0 && f <= math.MaxUint32
	case "uint64":
		return f >= 0 && f < 1<<64
	}
	return f >= math.MinInt64 && f < 1<<63
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// jsonEqual compares decoded JSON values, numbers by value (int64 1 equals float64 1).
func jsonEqual(a, b any) bool {
	if fa, ok := toFloat(a); ok {
		fb, ok := toFloat(b)
		return ok && fa == fb
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

var (
	uuidPattern     = regexp.MustCompile(`^(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$`)
	hostnamePattern = regexp.MustCompile(`^[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*$`)
)

// validFormat checks the string formats that are cheap to check; other formats pass.
func validFormat(format, x string) bool {
	switch format {
	case "date-time", "datetime":
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999Z0700", "2006-01-02T15:04:05Z07:00", "2006-01-02T15:04:05"} {
			if _, err := time.Parse(layout, x); err == nil {
				return true
			}
		}
		return false
	case "date":
		_, err := time.Parse("2006-01-02", x)
		return err == nil
	case "byte":
		_, err := base64.StdEncoding.DecodeString(x)
		return err == nil
	case "uuid":
		return uuidPattern.MatchString(x)
	case "ipv4":
		a, err := netip.ParseAddr(x)
		return err == nil && a.Is4()
	case "ipv6":
		a, err := netip.ParseAddr(x)
		return err == nil && a.Is6()
	case "cidr":
		_, _, err := net.ParseCIDR(x)
		return err == nil
	case "hostname":
		return len(x) <= 255 && hostnamePattern.MatchString(x)
	}
	return true
}

// crdSchemas parses the schema of every version of crd (JSON fields), keyed by version name;
// a version without a schema has none (nil). A schema that is not structural is a 422 naming
// the CRD and each offending field, as the API server answers.
func crdSchemas(name string, versions []any) (map[string]*structural, error) {
	out := map[string]*structural{}
	var errs field.ErrorList
	raws := make([]map[string]any, len(versions))
	same := true
	for i, v := range versions {
		version, _ := v.(map[string]any)
		sch, _ := version["schema"].(map[string]any)
		raws[i], _ = sch["openAPIV3Schema"].(map[string]any)
		same = same && raws[i] != nil && reflect.DeepEqual(raws[i], raws[0])
	}
	for i, v := range versions {
		version, _ := v.(map[string]any)
		vname, _ := version["name"].(string)
		if raws[i] == nil {
			continue
		}
		// The API server validates a schema all versions share as the internal version's
		// spec.validation, and names its fields so.
		path := field.NewPath("spec", "versions").Index(i).Child("schema", "openAPIV3Schema")
		if same {
			path = field.NewPath("spec", "validation", "openAPIV3Schema")
		}
		s, serrs := parseSchema(raws[i], path)
		if !same || i == 0 {
			errs = append(errs, serrs...)
		}
		out[vname] = s
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: CRDResource.Group, Kind: "CustomResourceDefinition"}, name, errs)
	}
	return out, nil
}

// schemaError wraps the parse errors of a schema given in Options.
func schemaError(errs field.ErrorList) error {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return fmt.Errorf("schema is not structural: %s", strings.Join(msgs, "; "))
}
