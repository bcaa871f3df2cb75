package fakecluster

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
