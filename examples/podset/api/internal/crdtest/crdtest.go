package crdtest

import (
	"bufio"
	"bytes"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Parse decodes a CRD manifest the way the API machinery does (integers stay int64),
// insisting on exactly one YAML document.
func Parse(t *testing.T, manifest []byte) *unstructured.Unstructured {
	t.Helper()
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	doc, err := docs.Read()
	require.NoError(t, err)
	_, err = docs.Read()
	require.ErrorIs(t, err, io.EOF, "crd.yaml must hold one document")

	js, err := utilyaml.ToJSON(doc)
	require.NoError(t, err)
	crd := &unstructured.Unstructured{}
	require.NoError(t, crd.UnmarshalJSON(js))
	return crd
}

// Nested returns the field of obj at the path fields, failing the test when it is missing or
// not a V.
func Nested[V any](t *testing.T, obj map[string]any, fields ...string) V {
	t.Helper()
	v, found, err := unstructured.NestedFieldNoCopy(obj, fields...)
	require.NoError(t, err, strings.Join(fields, "."))
	require.True(t, found, "%s missing", strings.Join(fields, "."))
	typed, ok := v.(V)
	require.True(t, ok, "%s is %T", strings.Join(fields, "."), v)
	return typed
}

// AssertSchemaMatches checks the two ways a hand-written schema drifts from the Go type root
// serves (named name in messages): a node without a type (the API server rejects
// non-structural schemas) and a Go JSON field with no schema (the API server would prune it
// from every write) or the reverse (a schema for a field the Go type cannot hold).
func AssertSchemaMatches(t *testing.T, name string, root map[string]any, typ reflect.Type) {
	t.Helper()
	assertStructural(t, "openAPIV3Schema", root)
	assertSchemaCoversType(t, name, root, typ)
}

func assertStructural(t *testing.T, path string, schema map[string]any) {
	t.Helper()
	if _, ok := schema["type"].(string); !ok {
		t.Errorf("%s: schema node has no type", path)
	}
	if props, ok := schema["properties"].(map[string]any); ok {
		for name, p := range props {
			assertStructural(t, path+"."+name, p.(map[string]any))
		}
	}
	if items, ok := schema["items"].(map[string]any); ok {
		assertStructural(t, path+"[]", items)
	}
	if ap, ok := schema["additionalProperties"].(map[string]any); ok {
		assertStructural(t, path+"{}", ap)
	}
}

// assertSchemaCoversType compares the JSON field names of typ (following inline
// embedding, pointers and slices) with the schema's properties, wherever the schema
// lists properties. Nodes without properties (metadata, the preserved pod template,
// maps) are left to the API server.
func assertSchemaCoversType(t *testing.T, path string, schema map[string]any, typ reflect.Type) {
	t.Helper()
	for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
		typ = typ.Elem()
		if items, ok := schema["items"].(map[string]any); ok {
			schema = items
		}
	}
	props, ok := schema["properties"].(map[string]any)
	if !ok || typ.Kind() != reflect.Struct {
		return
	}
	goFields := map[string]reflect.Type{}
	collectJSONFields(typ, goFields)
	var missing, stale []string
	for name, ft := range goFields {
		p, ok := props[name].(map[string]any)
		if !ok {
			missing = append(missing, name)
			continue
		}
		assertSchemaCoversType(t, path+"."+name, p, ft)
	}
	for name := range props {
		if _, ok := goFields[name]; !ok {
			stale = append(stale, name)
		}
	}
	slices.Sort(missing)
	slices.Sort(stale)
	require.Empty(t, missing, "%s: Go fields without schema", path)
	require.Empty(t, stale, "%s: schema properties without Go field", path)
}

func collectJSONFields(typ reflect.Type, into map[string]reflect.Type) {
	for f := range typ.Fields() {
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" && (strings.Contains(opts, "inline") || f.Anonymous) {
			collectJSONFields(f.Type, into)
			continue
		}
		if name == "" {
			name = f.Name
		}
		into[name] = f.Type
	}
}
