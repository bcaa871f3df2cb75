package crdtest

import (
	"bufio"
	"bytes"
	"io"
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
