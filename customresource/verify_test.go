package customresource_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
)

// crdWithSchema is a one-version (v1) CRD whose openAPIV3Schema is schema, a YAML flow
// mapping.
func crdWithSchema(schema string) []byte {
	return []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: ` + schema + `
`)
}

// mismatches returns the lines VerifyCRD's error lists, or nil for no error.
func mismatches(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	require.ErrorIs(t, err, customresource.ErrCRDMismatch)
	lines := strings.Split(err.Error(), "\n\t")
	require.Greater(t, len(lines), 1, "the error lists its mismatches: %v", err)
	return lines[1:]
}

type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              widgetSpec `json:"spec"`
}

type widgetSpec struct {
	Name     string             `json:"name"`
	Enabled  bool               `json:"enabled,omitempty"`
	Size     *int32             `json:"size,omitempty"`
	Bytes    int64              `json:"bytes,omitempty"`
	Count    int                `json:"count,omitempty"`
	Ratio    float64            `json:"ratio,omitempty"`
	Labels   map[string]string  `json:"labels,omitempty"`
	Tags     []string           `json:"tags,omitempty"`
	Ports    []port             `json:"ports,omitempty"`
	Since    *metav1.Time       `json:"since,omitempty"`
	Micro    metav1.MicroTime   `json:"micro,omitempty"`
	Timeout  metav1.Duration    `json:"timeout,omitempty"`
	Memory   resource.Quantity  `json:"memory,omitempty"`
	Target   intstr.IntOrString `json:"target,omitempty"`
	Raw      runtime.RawExtension
	Data     []byte             `json:"data,omitempty"`
	Anything any                `json:"anything,omitempty"`
	Counts   map[string][]int8  `json:"counts,omitempty"`
	Ignored  string             `json:"-"`
	Conds    []metav1.Condition `json:"conditions,omitempty"`
}

type port struct {
	Port int32 `json:"port"`
}

// widgetSchema is the schema controller-gen would write for widget.
const widgetSchema = `{type: object, properties: {
  apiVersion: {type: string}, kind: {type: string}, metadata: {type: object},
  spec: {type: object, required: [name], properties: {
    name: {type: string, minLength: 1},
    enabled: {type: boolean},
    size: {type: integer, format: int32, default: 3},
    bytes: {type: integer, format: int64},
    count: {type: integer},
    ratio: {type: number},
    labels: {type: object, additionalProperties: {type: string}},
    tags: {type: array, items: {type: string}},
    ports: {type: array, items: {type: object, properties: {port: {type: integer, format: int32}}}},
    since: {type: string, format: date-time},
    micro: {type: string, format: date-time},
    timeout: {type: string},
    memory: {anyOf: [{type: integer}, {type: string}], x-kubernetes-int-or-string: true},
    target: {anyOf: [{type: integer}, {type: string}], x-kubernetes-int-or-string: true},
    Raw: {type: object, x-kubernetes-preserve-unknown-fields: true},
    data: {type: string, format: byte},
    anything: {x-kubernetes-preserve-unknown-fields: true},
    counts: {type: object, additionalProperties: {type: array, items: {type: integer}}},
    conditions: {type: array, items: {type: object, properties: {
      type: {type: string}, status: {type: string}, observedGeneration: {type: integer, format: int64},
      lastTransitionTime: {type: string, format: date-time}, reason: {type: string}, message: {type: string}}}}
  }}}}`

func TestVerifyCRDAcceptsEveryKindOfField(t *testing.T) {
	require.NoError(t, customresource.VerifyCRD(crdWithSchema(widgetSchema), "v1", &widget{}))
	require.NoError(t, customresource.VerifyCRD(crdWithSchema(widgetSchema), "v1", widget{}), "a value works like a pointer")
	require.NoError(t, customresource.VerifyCRD(crdWithSchema(widgetSchema), "v1", (*widget)(nil)), "only the type is read")
}

// replaceIn returns widgetSchema with old replaced by new, failing when old is not there.
func replaceIn(t *testing.T, old, new string) string {
	t.Helper()
	require.Contains(t, widgetSchema, old)
	return strings.Replace(widgetSchema, old, new, 1)
}

func TestVerifyCRDReportsEachRule(t *testing.T) {
	for name, tc := range map[string]struct{ old, new, want string }{
		"Go field without schema": {"enabled: {type: boolean},", "",
			"spec.enabled: no schema property, Go bool (the API server prunes it)"},
		"schema property without Go field": {"name: {type: string, minLength: 1},", "name: {type: string}, nickname: {type: string},",
			"spec.nickname: schema string, no Go field (reads drop it)"},
		"string is not integer": {"name: {type: string, minLength: 1}", "name: {type: integer}",
			"spec.name: schema integer, Go string"},
		"boolean": {"enabled: {type: boolean}", "enabled: {type: string}",
			"spec.enabled: schema string, Go bool"},
		"int32 format": {"size: {type: integer, format: int32, default: 3}", "size: {type: integer, format: int64}",
			"spec.size: schema integer (int64), Go int32"},
		"int64 format": {"bytes: {type: integer, format: int64}", "bytes: {type: integer, format: int32}",
			"spec.bytes: schema integer (int32), Go int64"},
		"number is not integer": {"ratio: {type: number}", "ratio: {type: integer}",
			"spec.ratio: schema integer, Go float64"},
		"integer is not number": {"count: {type: integer}", "count: {type: number}",
			"spec.count: schema number, Go int"},
		"map without additionalProperties": {"labels: {type: object, additionalProperties: {type: string}}", "labels: {type: object}",
			"spec.labels: schema object without additionalProperties, Go map[string]string (the API server prunes every key)"},
		"map with properties": {"labels: {type: object, additionalProperties: {type: string}}", "labels: {type: object, properties: {app: {type: string}}}",
			"spec.labels: schema object with properties and no additionalProperties, Go map[string]string (the API server prunes other keys)"},
		"map values": {"additionalProperties: {type: string}", "additionalProperties: {type: integer}",
			"spec.labels{}: schema integer, Go string"},
		"nested map and slice": {"additionalProperties: {type: array, items: {type: integer}}", "additionalProperties: {type: array, items: {type: string}}",
			"spec.counts{}[]: schema string, Go int8"},
		"array without items": {"tags: {type: array, items: {type: string}}", "tags: {type: array}",
			"spec.tags: schema array without items, Go []string"},
		"array items": {"tags: {type: array, items: {type: string}}", "tags: {type: array, items: {type: boolean}}",
			"spec.tags[]: schema boolean, Go string"},
		"slice is not object": {"tags: {type: array, items: {type: string}}", "tags: {type: object}",
			"spec.tags: schema object, Go []string"},
		"struct in array": {"port: {type: integer, format: int32}", "port: {type: string}",
			"spec.ports[].port: schema string, Go int32"},
		"time needs date-time": {"since: {type: string, format: date-time}", "since: {type: string}",
			"spec.since: schema string, Go v1.Time (want format date-time)"},
		"micro time": {"micro: {type: string, format: date-time}", "micro: {type: integer}",
			"spec.micro: schema integer, Go v1.MicroTime"},
		"duration": {"timeout: {type: string}", "timeout: {type: integer}",
			"spec.timeout: schema integer, Go v1.Duration"},
		"quantity needs int-or-string": {"memory: {anyOf: [{type: integer}, {type: string}], x-kubernetes-int-or-string: true}", "memory: {type: string}",
			"spec.memory: schema string, Go resource.Quantity (want x-kubernetes-int-or-string)"},
		"int-or-string": {"target: {anyOf: [{type: integer}, {type: string}], x-kubernetes-int-or-string: true}", "target: {type: integer}",
			"spec.target: schema integer, Go intstr.IntOrString (want x-kubernetes-int-or-string)"},
		"bytes are base64": {"data: {type: string, format: byte}", "data: {type: array, items: {type: integer}}",
			"spec.data: schema array, Go []uint8"},
		"struct without properties": {"ports: {type: array, items: {type: object, properties: {port: {type: integer, format: int32}}}}", "ports: {type: array, items: {type: object}}",
			"spec.ports[]: schema object without properties, Go customresource_test.port (the API server prunes all of it)"},
		"no type": {"name: {type: string, minLength: 1}", "name: {minLength: 1}",
			"spec.name: schema without type, Go string"},
		"condition fields": {"reason: {type: string}, ", "",
			"spec.conditions[].reason: no schema property, Go string (the API server prunes it)"},
		"condition time": {"lastTransitionTime: {type: string, format: date-time}", "lastTransitionTime: {type: string}",
			"spec.conditions[].lastTransitionTime: schema string, Go v1.Time (want format date-time)"},
		"kind at the root": {"kind: {type: string}", "kind: {type: integer}",
			"kind: schema integer, Go string"},
		"metadata at the root": {"metadata: {type: object}", "metadata: {type: string}",
			"metadata: schema string, Go v1.ObjectMeta"},
	} {
		t.Run(name, func(t *testing.T) {
			err := customresource.VerifyCRD(crdWithSchema(replaceIn(t, tc.old, tc.new)), "v1", &widget{})
			require.Equal(t, []string{tc.want}, mismatches(t, err))
		})
	}
}

// One error lists every mismatch, Go fields in their order, then the schema's extra
// properties sorted.
func TestVerifyCRDListsEveryMismatch(t *testing.T) {
	type spec struct {
		Name string   `json:"name"`
		Size int32    `json:"size"`
		Tags []string `json:"tags"`
	}
	type obj struct {
		Spec spec `json:"spec"`
	}
	schema := `{type: object, properties: {spec: {type: object, properties: {
	  tags: {type: string}, size: {type: string}, zeta: {type: string}, alpha: {type: integer}}}}}`
	err := customresource.VerifyCRD(crdWithSchema(schema), "v1", &obj{})
	require.Equal(t, []string{
		"spec.name: no schema property, Go string (the API server prunes it)",
		"spec.size: schema string, Go int32",
		"spec.tags: schema string, Go []string",
		"spec.alpha: schema integer, no Go field (reads drop it)",
		"spec.zeta: schema string, no Go field (reads drop it)",
	}, mismatches(t, err))
	require.True(t, strings.HasPrefix(err.Error(),
		"customresource: CRD widgets.example.com version v1 and Go type customresource_test.obj: CRD schema does not match the Go type:\n\t"), err.Error())
}

func TestVerifyCRDRootAndEmbeddedResources(t *testing.T) {
	type inner struct {
		Replicas int32 `json:"replicas"`
	}
	type templated struct {
		metav1.ObjectMeta `json:"metadata,omitempty"`
		Spec              inner `json:"spec"`
	}
	type object struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty"`
		Template          templated `json:"template"`
		Embedded          struct {
			metav1.TypeMeta   `json:",inline"`
			metav1.ObjectMeta `json:"metadata,omitempty"`
			Spec              inner `json:"spec"`
		} `json:"embedded"`
	}
	for name, tc := range map[string]struct {
		schema string
		want   []string
	}{
		// The root needs neither apiVersion, kind nor metadata: the API server serves them.
		"root without TypeMeta or metadata": {`{type: object, properties: {
			template: {type: object, properties: {metadata: {type: object, properties: {labels: {type: object, additionalProperties: {type: string}}}},
			  spec: {type: object, properties: {replicas: {type: integer}}}}},
			embedded: {type: object, x-kubernetes-embedded-resource: true, properties: {spec: {type: object, properties: {replicas: {type: integer}}}}}}}`,
			nil},
		// controller-gen's default: a nested ObjectMeta the API server prunes to nothing.
		"nested metadata without properties": {`{type: object, properties: {
			template: {type: object, properties: {metadata: {type: object}, spec: {type: object, properties: {replicas: {type: integer}}}}},
			embedded: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}}}`,
			[]string{"template.metadata: schema object without properties, Go v1.ObjectMeta (the API server prunes all of it)"}},
		"nested metadata property of the wrong type": {`{type: object, properties: {
			template: {type: object, properties: {metadata: {type: object, properties: {labels: {type: array, items: {type: string}}, color: {type: string}}},
			  spec: {type: object, properties: {replicas: {type: integer}}}}},
			embedded: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}}}`,
			[]string{"template.metadata.labels: schema array, Go map[string]string", "template.metadata.color: schema string, no Go field (reads drop it)"}},
		"embedded resource compared below its metadata": {`{type: object, properties: {
			template: {type: object, x-kubernetes-preserve-unknown-fields: true},
			embedded: {type: object, x-kubernetes-embedded-resource: true, properties: {spec: {type: object, properties: {replicas: {type: string}}}}}}}`,
			[]string{"embedded.spec.replicas: schema string, Go int32"}},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, mismatches(t, customresource.VerifyCRD(crdWithSchema(tc.schema), "v1", &object{})))
		})
	}
	err := customresource.VerifyCRD(crdWithSchema(`{type: string}`), "v1", &object{})
	require.Equal(t, []string{"(root): schema string, Go customresource_test.object"}, mismatches(t, err))
}

// x-kubernetes-preserve-unknown-fields keeps what the schema does not list, so Go fields
// may go unlisted there; what it does list is still compared, and the type still counts.
func TestVerifyCRDPreserveUnknownFields(t *testing.T) {
	type obj struct {
		Spec struct {
			A string `json:"a"`
			B int32  `json:"b"`
		} `json:"spec"`
		Extra map[string]int `json:"extra"`
		Free  any            `json:"free"`
	}
	for name, tc := range map[string]struct {
		schema string
		want   []string
	}{
		"nothing listed": {`{type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true},
			extra: {type: object, x-kubernetes-preserve-unknown-fields: true}, free: {type: string}}}`, nil},
		"some listed": {`{type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {a: {type: string}}},
			extra: {type: object, additionalProperties: true}, free: {type: array, items: {type: string}}}}`, nil},
		"listed and wrong": {`{type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {a: {type: integer}, c: {type: string}}},
			extra: {type: object, additionalProperties: {type: integer}}, free: {type: object}}}`,
			[]string{"spec.a: schema integer, Go string", "spec.c: schema string, no Go field (reads drop it)"}},
		"still an object": {`{type: object, properties: {spec: {type: string, x-kubernetes-preserve-unknown-fields: true},
			extra: {x-kubernetes-preserve-unknown-fields: true}, free: {type: string}}}`,
			[]string{"spec: schema string, Go struct { A string \"json:\\\"a\\\"\"; B int32 \"json:\\\"b\\\"\" }"}},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, mismatches(t, customresource.VerifyCRD(crdWithSchema(tc.schema), "v1", &obj{})))
		})
	}
}

// The JSON fields are encoding/json's: tags, "-", unexported fields, inlined embedded
// structs (shallowest name wins), the ",string" option.
func TestVerifyCRDFollowsEncodingJSON(t *testing.T) {
	type Base struct {
		Name  string `json:"name"`
		Shade string `json:"color"` // shadowed by the outer color
	}
	type meta struct {
		Owner string `json:"owner"`
	}
	type obj struct {
		Base
		*meta
		Color    int32 `json:"color"`
		Untagged bool
		Quoted   int64  `json:"quoted,string"`
		Skipped  string `json:"-"`
		Dash     string `json:"-,"`
		private  string //nolint:unused // not JSON
	}
	schema := `{type: object, properties: {name: {type: string}, owner: {type: string}, color: {type: integer, format: int32},
		Untagged: {type: boolean}, quoted: {type: string}, "-": {type: string}}}`
	require.NoError(t, customresource.VerifyCRD(crdWithSchema(schema), "v1", &obj{}))

	schema = `{type: object, properties: {name: {type: string}, owner: {type: string}, color: {type: string},
		Untagged: {type: boolean}, quoted: {type: integer}, "-": {type: string}, Skipped: {type: string}}}`
	require.Equal(t, []string{
		"color: schema string, Go int32",
		"quoted: schema integer, Go int64",
		"Skipped: schema string, no Go field (reads drop it)",
	}, mismatches(t, customresource.VerifyCRD(crdWithSchema(schema), "v1", &obj{})))
}

func TestVerifyCRDRefusesBadInput(t *testing.T) {
	manifest := crdWithSchema(widgetSchema)

	err := customresource.VerifyCRD(manifest, "v2", &widget{})
	require.ErrorIs(t, err, customresource.ErrCRDMismatch)
	require.EqualError(t, err, `customresource: CRD widgets.example.com has no version "v2" (it has ["v1"]): CRD schema does not match the Go type`)

	noSchema := []byte(strings.Replace(string(manifest), "    schema:\n      openAPIV3Schema: "+widgetSchema+"\n", "", 1))
	require.NotEqual(t, manifest, noSchema)
	err = customresource.VerifyCRD(noSchema, "v1", &widget{})
	require.ErrorIs(t, err, customresource.ErrCRDMismatch)
	require.ErrorContains(t, err, "version v1 has no schema.openAPIV3Schema")

	for name, bad := range map[string]string{
		"not a CRD":        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
		"two documents":    string(manifest) + "---\n" + string(manifest),
		"not YAML":         "{{{",
		"versions not map": "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: x}\nspec: {versions: [v1]}\n",
		"schema not map":   strings.Replace(string(manifest), "openAPIV3Schema: "+widgetSchema, "openAPIV3Schema: {properties: [1]}", 1),
	} {
		t.Run(name, func(t *testing.T) {
			require.ErrorIs(t, customresource.VerifyCRD([]byte(bad), "v1", &widget{}), customresource.ErrInvalidManifest)
		})
	}

	require.ErrorIs(t, customresource.VerifyCRD(manifest, "v1", nil), customresource.ErrInvalidInput)
	err = customresource.VerifyCRD(manifest, "v1", new(string))
	require.ErrorIs(t, err, customresource.ErrInvalidInput)
	require.ErrorContains(t, err, "obj is a string, want a struct")
}

// A JSON manifest works like YAML, and the CRDs of the examples match their types.
func TestVerifyCRDOnRealManifests(t *testing.T) {
	u := parseManifest(t)
	js, err := u.MarshalJSON()
	require.NoError(t, err)
	require.NoError(t, customresource.VerifyCRD(js, v1alpha1.Version, &v1alpha1.PodSet{}))
	require.NoError(t, customresource.VerifyCRD(v1alpha1.CRDManifest, v1alpha1.Version, &v1alpha1.PodSet{}))

	// The status's Go type is not the object's: everything at the root is reported.
	lines := mismatches(t, customresource.VerifyCRD(v1alpha1.CRDManifest, v1alpha1.Version, &v1alpha1.PodSetStatus{}))
	require.Contains(t, lines, "replicas: no schema property, Go int32 (the API server prunes it)")
	require.Contains(t, lines, "spec: schema object, no Go field (reads drop it)")
}
