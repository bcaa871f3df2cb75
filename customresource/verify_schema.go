package customresource

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// verifier walks a Go type next to a schema and collects VerifyCRD's mismatches.
type verifier struct {
	mismatches []string
}

func (v *verifier) fail(path, format string, args ...any) {
	if path == "" {
		path = "(root)"
	}
	v.mismatches = append(v.mismatches, path+": "+fmt.Sprintf(format, args...))
}

var (
	objectMetaType     = reflect.TypeFor[metav1.ObjectMeta]()
	jsonMarshalerType  = reflect.TypeFor[json.Marshaler]()
	textMarshalerType  = reflect.TypeFor[encoding.TextMarshaler]()
	intOrStringType    = reflect.TypeFor[intstr.IntOrString]()
	quantityType       = reflect.TypeFor[resource.Quantity]()
	timeType           = reflect.TypeFor[metav1.Time]()
	goTimeType         = reflect.TypeFor[time.Time]()
	microTimeType      = reflect.TypeFor[metav1.MicroTime]()
	durationType       = reflect.TypeFor[metav1.Duration]()
	rawExtensionType   = reflect.TypeFor[runtime.RawExtension]()
	resourceRootFields = []string{"apiVersion", "kind", "metadata"}
)

// value compares the schema s of the field at path with its Go type t.
func (v *verifier) value(path string, s *schemaNode, t reflect.Type, asString bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case timeType, microTimeType, goTimeType:
		if v.hasType(path, s, t, "string") && s.Format != "date-time" {
			v.fail(path, "schema %s, Go %s (want format date-time)", s, t)
		}
		return
	case durationType:
		v.hasType(path, s, t, "string")
		return
	case intOrStringType, quantityType:
		if !s.IntOrString {
			v.fail(path, "schema %s, Go %s (want x-kubernetes-int-or-string)", s, t)
		}
		return
	case rawExtensionType:
		return // any JSON
	}
	if t.Kind() == reflect.Interface || t.Implements(jsonMarshalerType) || reflect.PointerTo(t).Implements(jsonMarshalerType) {
		return // its JSON is whatever it makes it
	}
	if t.Implements(textMarshalerType) || reflect.PointerTo(t).Implements(textMarshalerType) {
		v.hasType(path, s, t, "string")
		return
	}
	switch k := t.Kind(); k {
	case reflect.String:
		v.hasType(path, s, t, "string")
	case reflect.Bool:
		v.hasType(path, s, t, scalarType(asString, "boolean"))
	case reflect.Float32, reflect.Float64:
		v.hasType(path, s, t, scalarType(asString, "number"))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if !v.hasType(path, s, t, scalarType(asString, "integer")) || asString {
			return
		}
		if bits := t.Bits(); (s.Format == "int32" && bits != 32) || (s.Format == "int64" && bits != 64) {
			v.fail(path, "schema %s, Go %s", s, t)
		}
	case reflect.Slice, reflect.Array:
		if k == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			v.hasType(path, s, t, "string") // base64
			return
		}
		if !v.hasType(path, s, t, "array") || s.PreserveUnknown && s.Items == nil {
			return
		}
		if s.Items == nil {
			v.fail(path, "schema array without items, Go %s", t)
			return
		}
		v.value(path+"[]", s.Items, t.Elem(), false)
	case reflect.Map:
		if !v.hasType(path, s, t, "object") {
			return
		}
		switch ap := s.AdditionalProperties; {
		case ap != nil && ap.Schema != nil:
			v.value(path+"{}", ap.Schema, t.Elem(), false)
		case ap != nil && ap.Allows, s.PreserveUnknown:
			// any value
		case len(s.Properties) > 0:
			v.fail(path, "schema object with properties and no additionalProperties, Go %s (the API server prunes other keys)", t)
		default:
			v.fail(path, "schema object without additionalProperties, Go %s (the API server prunes every key)", t)
		}
	case reflect.Struct:
		if v.hasType(path, s, t, "object") {
			v.object(path, s, t, s.EmbeddedResource)
		}
	default:
		v.fail(path, "Go %s has no JSON form", t)
	}
}

// scalarType is the schema type of a scalar, or string when its field has the json tag
// option ",string".
func scalarType(asString bool, typ string) string {
	if asString {
		return "string"
	}
	return typ
}

// hasType reports whether s accepts JSON of type want, recording a mismatch when it does
// not. A schema without type accepts anything only when it preserves unknown fields.
func (v *verifier) hasType(path string, s *schemaNode, t reflect.Type, want string) bool {
	switch {
	case s.Type == want:
		return true
	case s.Type == "" && s.PreserveUnknown && !s.IntOrString:
		return true
	}
	v.fail(path, "schema %s, Go %s", s, t)
	return false
}

// object compares the properties of s with the JSON fields of the struct t. At a resource's
// root (resourceRoot), apiVersion, kind and metadata belong to the API server and are
// compared only for type, where both sides have them.
func (v *verifier) object(path string, s *schemaNode, t reflect.Type, resourceRoot bool) {
	fields := jsonFields(t)
	partial := t == objectMetaType // the server keeps only some of ObjectMeta when nested
	if len(s.Properties) == 0 && !s.PreserveUnknown && len(fields) > 0 && !resourceRoot {
		v.fail(path, "schema object without properties, Go %s (the API server prunes all of it)", t)
		return
	}
	for _, f := range fields {
		if resourceRoot && slices.Contains(resourceRootFields, f.name) {
			switch p := s.Properties[f.name]; {
			case p == nil:
			case f.name == "metadata":
				v.hasType(join(path, f.name), p, deref(f.typ), "object")
			default:
				v.value(join(path, f.name), p, f.typ, f.asString)
			}
			continue
		}
		p := s.Properties[f.name]
		if p == nil {
			if !s.PreserveUnknown && !partial {
				v.fail(join(path, f.name), "no schema property, Go %s (the API server prunes it)", deref(f.typ))
			}
			continue
		}
		v.value(join(path, f.name), p, f.typ, f.asString)
	}
	var extra []string
	for name := range s.Properties {
		if !slices.ContainsFunc(fields, func(f jsonField) bool { return f.name == name }) {
			extra = append(extra, name)
		}
	}
	slices.Sort(extra)
	for _, name := range extra {
		p := s.Properties[name]
		switch {
		case resourceRoot && name == "metadata":
			v.hasType(join(path, name), p, objectMetaType, "object")
		case resourceRoot && slices.Contains(resourceRootFields, name):
			v.hasType(join(path, name), p, reflect.TypeFor[string](), "string")
		default:
			v.fail(join(path, name), "schema %s, no Go field (reads drop it)", p)
		}
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// jsonField is one field of a struct's JSON object.
type jsonField struct {
	name     string
	typ      reflect.Type
	asString bool // the ",string" option
	depth    int  // how deeply embedded
	tagged   bool // named by its json tag
}

// jsonFields lists the fields encoding/json writes for the struct t, in order: embedded
// structs without a json name are inlined, and where names collide the shallowest field
// wins, then the one named by a tag; encoding/json drops fields that still tie.
func jsonFields(t reflect.Type) []jsonField {
	var all []jsonField
	collectJSONFields(t, 0, map[reflect.Type]bool{}, &all)
	byName := map[string][]jsonField{}
	for _, f := range all {
		byName[f.name] = append(byName[f.name], f)
	}
	var out []jsonField
	for _, f := range all {
		if dominant(byName[f.name]) == f {
			out = append(out, f)
		}
	}
	return out
}

func dominant(fields []jsonField) jsonField {
	slices.SortStableFunc(fields, func(a, b jsonField) int { return a.depth - b.depth })
	top := fields[:1]
	for _, f := range fields[1:] {
		if f.depth == top[0].depth {
			top = append(top, f)
		}
	}
	if len(top) == 1 {
		return top[0]
	}
	var tagged []jsonField
	for _, f := range top {
		if f.tagged {
			tagged = append(tagged, f)
		}
	}
	if len(tagged) == 1 {
		return tagged[0]
	}
	return jsonField{} // ambiguous: encoding/json writes none of them
}

func collectJSONFields(t reflect.Type, depth int, inlining map[reflect.Type]bool, into *[]jsonField) {
	inlining[t] = true
	defer delete(inlining, t)
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			et := deref(ft)
			if et.Kind() == reflect.Struct {
				if !inlining[et] {
					collectJSONFields(et, depth+1, inlining, into)
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		tagged := name != ""
		if !tagged {
			name = f.Name
		}
		asString := slices.Contains(strings.Split(opts, ","), "string")
		*into = append(*into, jsonField{name: name, typ: ft, asString: asString, depth: depth, tagged: tagged})
	}
}
