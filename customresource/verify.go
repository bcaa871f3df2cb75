package customresource

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ErrCRDMismatch is wrapped by VerifyCRD's error when a CRD's schema and a Go type disagree,
// or when the CRD does not serve the version asked for.
var ErrCRDMismatch = errors.New("CRD schema does not match the Go type")

// VerifyCRD checks that the openAPIV3Schema of version in manifest (one
// apiextensions.k8s.io/v1 CustomResourceDefinition, YAML or JSON) describes the JSON that
// obj's Go type reads and writes, so that a committed CRD cannot drift from its types
// unnoticed. Call it in a test of the API package:
//
//	func TestCRDMatchesTypes(t *testing.T) {
//		if err := customresource.VerifyCRD(CRDManifest, Version, &WebApp{}); err != nil {
//			t.Fatal(err)
//		}
//	}
//
// It walks the Go type as encoding/json does (json tags, embedded and inline structs,
// pointers; omitempty does not change the shape) next to the schema, and reports:
//   - a Go field without a schema property, which the API server would prune from every
//     write, unless the schema preserves unknown fields there;
//   - a schema property without a Go field, which every read would drop;
//   - a field whose types differ: string, boolean, number, integer (int32 or int64 when
//     the schema gives that format), object for structs, object with additionalProperties
//     for maps, array with items for slices.
//
// Some Go types have a JSON form of their own: metav1.Time and metav1.MicroTime need a
// string of format date-time, metav1.Duration a string, resource.Quantity and
// intstr.IntOrString x-kubernetes-int-or-string, []byte a string. runtime.RawExtension,
// interface types and other types with their own MarshalJSON match any schema, and so does
// any Go type where the schema sets x-kubernetes-preserve-unknown-fields without listing
// properties. At the root, and in x-kubernetes-embedded-resource objects, TypeMeta and
// metadata are the API server's and are not compared. A metav1.ObjectMeta elsewhere (a
// Pod template's) must have a schema with properties, or the API server prunes all of it;
// the properties it lists are compared, and ObjectMeta's fields the schema leaves out are
// not reported.
//
// Validation (required, minimum, enum, patterns, defaults) is the schema's own business and
// is not compared; VerifyCRD is about shape.
//
// The returned error wraps ErrCRDMismatch and lists every mismatch by path, one per line
// (spec.replicas: schema integer, Go string). A manifest that is not one CRD wraps
// ErrInvalidManifest; a nil obj wraps ErrInvalidInput. VerifyCRD only reads its arguments.
func VerifyCRD(manifest []byte, version string, obj any) error {
	typ := reflect.TypeOf(obj)
	if typ == nil {
		return fmt.Errorf("customresource: verify CRD: nil obj: %w", ErrInvalidInput)
	}
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct {
		return fmt.Errorf("customresource: verify CRD: obj is a %s, want a struct or a pointer to one: %w", typ, ErrInvalidInput)
	}
	crd, err := parseCRDManifest(manifest)
	if err != nil {
		return err
	}
	root, err := versionSchema(crd, version)
	if err != nil {
		return err
	}
	v := &verifier{}
	if v.hasType("", root, typ, "object") {
		v.object("", root, typ, true)
	}
	if len(v.mismatches) == 0 {
		return nil
	}
	return fmt.Errorf("customresource: CRD %s version %s and Go type %s: %w:\n\t%s",
		crd.GetName(), version, typ, ErrCRDMismatch, strings.Join(v.mismatches, "\n\t"))
}

// versionSchema returns the openAPIV3Schema of version in crd.
func versionSchema(crd *unstructured.Unstructured, version string) (*schemaNode, error) {
	versions, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if err != nil {
		return nil, fmt.Errorf("customresource: CRD %s: spec.versions: %v: %w", crd.GetName(), err, ErrInvalidManifest)
	}
	var served []string
	for _, v := range versions {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("customresource: CRD %s: spec.versions holds a %T: %w", crd.GetName(), v, ErrInvalidManifest)
		}
		name, _ := m["name"].(string)
		if name != version {
			served = append(served, name)
			continue
		}
		raw, found, err := unstructured.NestedFieldNoCopy(m, "schema", "openAPIV3Schema")
		if err != nil || !found {
			return nil, fmt.Errorf("customresource: CRD %s version %s has no schema.openAPIV3Schema: %w", crd.GetName(), version, ErrCRDMismatch)
		}
		js, err := json.Marshal(raw)
		if err != nil {
			return nil, fmt.Errorf("customresource: CRD %s version %s: schema: %v: %w", crd.GetName(), version, err, ErrInvalidManifest)
		}
		root := &schemaNode{}
		if err := json.Unmarshal(js, root); err != nil {
			return nil, fmt.Errorf("customresource: CRD %s version %s: schema: %v: %w", crd.GetName(), version, err, ErrInvalidManifest)
		}
		return root, nil
	}
	return nil, fmt.Errorf("customresource: CRD %s has no version %q (it has %q): %w", crd.GetName(), version, served, ErrCRDMismatch)
}

// schemaNode is the part of an apiextensions.k8s.io/v1 JSONSchemaProps that decides the
// shape of the JSON it accepts (decoded here so that the main module needs no
// k8s.io/apiextensions-apiserver).
type schemaNode struct {
	Type                 string                 `json:"type"`
	Format               string                 `json:"format"`
	Properties           map[string]*schemaNode `json:"properties"`
	Items                *schemaNode            `json:"items"`
	AdditionalProperties *schemaOrBool          `json:"additionalProperties"`
	PreserveUnknown      bool                   `json:"x-kubernetes-preserve-unknown-fields"`
	IntOrString          bool                   `json:"x-kubernetes-int-or-string"`
	EmbeddedResource     bool                   `json:"x-kubernetes-embedded-resource"`
}

// schemaOrBool is additionalProperties: a schema, or true (any value) or false (none).
type schemaOrBool struct {
	Schema *schemaNode
	Allows bool
}

func (s *schemaOrBool) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &s.Allows); err == nil {
		return nil
	}
	s.Allows = true
	return json.Unmarshal(b, &s.Schema)
}

// String describes the node the way mismatches name it: its type, then its format or
// extension in parentheses.
func (s *schemaNode) String() string {
	t := s.Type
	if t == "" {
		t = "without type"
	}
	switch {
	case s.IntOrString:
		return t + " (x-kubernetes-int-or-string)"
	case s.Format != "":
		return t + " (" + s.Format + ")"
	}
	return t
}
