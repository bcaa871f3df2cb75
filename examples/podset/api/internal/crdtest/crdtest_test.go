package crdtest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/examples/podset/api/internal/crdtest"
)

const manifest = `# a comment before the document is part of it
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, default: 3}
`

func TestParseAndNested(t *testing.T) {
	crd := crdtest.Parse(t, []byte(manifest))
	require.Equal(t, "widgets.example.com", crd.GetName())
	v := crdtest.Nested[[]any](t, crd.Object, "spec", "versions")[0].(map[string]any)
	root := crdtest.Nested[map[string]any](t, v, "schema", "openAPIV3Schema")
	require.Equal(t, int64(3), crdtest.Nested[int64](t, root, "properties", "spec", "properties", "size", "default"),
		"integers stay int64, as the API machinery decodes them")
}
