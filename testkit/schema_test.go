package testkit_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/testkit"
)

var thingsGVR = schema.GroupVersionResource{Group: "schema.ctrlkit.dev", Version: "v1", Resource: "things"}

// thingCRD exercises every schema rule the fake models.
const thingCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.schema.ctrlkit.dev
spec:
  group: schema.ctrlkit.dev
  names: {kind: Thing, listKind: ThingList, plural: things, singular: thing}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        required: [spec]
        properties:
          spec:
            type: object
            required: [image]
            properties:
              image: {type: string, minLength: 1, maxLength: 20, pattern: '^[a-z0-9:./-]+$'}
              replicas: {type: integer, format: int32, minimum: 0, maximum: 10, default: 1}
              ratio: {type: number, minimum: 0, exclusiveMinimum: true, maximum: 1, exclusiveMaximum: true}
              step: {type: integer, multipleOf: 5}
              mode: {type: string, enum: [fast, slow], default: fast}
              tags:
                type: array
                minItems: 1
                maxItems: 3
                x-kubernetes-list-type: set
                items: {type: string}
              labels:
                type: object
                minProperties: 1
                maxProperties: 2
                additionalProperties: {type: string}
              nick: {type: string, nullable: true}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer, default: 80}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
              template:
                type: object
                x-kubernetes-embedded-resource: true
                properties:
                  spec:
                    type: object
                    properties:
                      x: {type: string}
              size: {x-kubernetes-int-or-string: true}
              when: {type: string, format: date-time}
              nested:
                type: object
                default: {}
                properties:
                  level: {type: integer, default: 3}
              flag: {type: boolean}
          status:
            type: object
            properties:
              ready: {type: integer, minimum: 0}
              phase: {type: string, enum: [Pending, Running]}
`

type schemaStep struct {
	name  string
	do    func(things dynamic.ResourceInterface) (*unstructured.Unstructured, error)
	check bool // compare the stored object after the step too
}

func thing(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "schema.ctrlkit.dev/v1", "kind": "Thing",
		"metadata": map[string]any{"name": name},
		"spec":     spec,
	}}
}

// schemaSteps are the writes both back ends get, in order.
func schemaSteps(t *testing.T, env *testkit.Env) []schemaStep {
	ctx := env.Context()
	create := func(name string, spec map[string]any) func(dynamic.ResourceInterface) (*unstructured.Unstructured, error) {
		return func(things dynamic.ResourceInterface) (*unstructured.Unstructured, error) {
			return things.Create(ctx, thing(name, spec), metav1.CreateOptions{})
		}
	}
	invalid := func(name string, spec map[string]any) schemaStep {
		return schemaStep{name: "invalid " + name, do: create("bad-"+strings.ToLower(strings.ReplaceAll(name, " ", "-")), spec)}
	}
	steps := []schemaStep{
		{name: "minimal, defaulted", do: create("minimal", map[string]any{"image": "nginx"})},
		{name: "null replaced by default", do: create("nulls", map[string]any{"image": "nginx", "replicas": nil, "nick": nil, "mode": nil})},
		{name: "everything valid", do: create("full", map[string]any{
			"image": "nginx:1.27", "replicas": int64(3), "ratio": 0.5, "step": int64(10), "mode": "slow",
			"tags": []any{"a", "b"}, "labels": map[string]any{"k": "v"}, "nick": "n",
			"ports":    []any{map[string]any{"name": "http"}, map[string]any{"name": "https", "port": int64(443)}},
			"extra":    map[string]any{"anything": map[string]any{"goes": true}},
			"template": map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "bogus": "x"}, "spec": map[string]any{"x": "y", "bogus": "z"}, "bogus": 1.5},
			"size":     "50%", "when": "2026-01-02T03:04:05Z", "flag": true,
		})},
		{name: "unknown fields pruned", do: func(things dynamic.ResourceInterface) (*unstructured.Unstructured, error) {
			u := thing("unknown", map[string]any{"image": "nginx", "bogus": "x", "nested": map[string]any{"deeper": int64(1)}})
			u.Object["bogus"] = "top"
			u.Object["status"] = map[string]any{"ready": int64(1)}
			u.Object["metadata"].(map[string]any)["bogus"] = "meta"
			u.SetLabels(map[string]string{"a": "b"})
			return things.Create(ctx, u, metav1.CreateOptions{})
		}},
		invalid("no spec", nil),
		invalid("required", map[string]any{"replicas": int64(2)}),
		invalid("type", map[string]any{"image": "nginx", "replicas": "two"}),
		invalid("type object", map[string]any{"image": "nginx", "labels": "x"}),
		invalid("type boolean", map[string]any{"image": "nginx", "flag": "yes"}),
		invalid("number for integer", map[string]any{"image": "nginx", "replicas": 1.5}),
		invalid("maximum", map[string]any{"image": "nginx", "replicas": int64(11)}),
		invalid("minimum", map[string]any{"image": "nginx", "replicas": int64(-1)}),
		invalid("exclusive minimum", map[string]any{"image": "nginx", "ratio": int64(0)}),
		invalid("exclusive maximum", map[string]any{"image": "nginx", "ratio": int64(1)}),
		invalid("multipleOf", map[string]any{"image": "nginx", "step": int64(7)}),
		invalid("enum", map[string]any{"image": "nginx", "mode": "medium"}),
		invalid("minLength", map[string]any{"image": ""}),
		invalid("maxLength", map[string]any{"image": strings.Repeat("a", 21)}),
		invalid("pattern", map[string]any{"image": "NGINX"}),
		invalid("minItems", map[string]any{"image": "nginx", "tags": []any{}}),
		invalid("maxItems", map[string]any{"image": "nginx", "tags": []any{"a", "b", "c", "d"}}),
		invalid("set duplicate", map[string]any{"image": "nginx", "tags": []any{"a", "a"}}),
		invalid("map duplicate", map[string]any{"image": "nginx", "ports": []any{map[string]any{"name": "a"}, map[string]any{"name": "a", "port": int64(1)}}}),
		invalid("item required", map[string]any{"image": "nginx", "ports": []any{map[string]any{"port": int64(1)}}}),
		invalid("minProperties", map[string]any{"image": "nginx", "labels": map[string]any{}}),
		invalid("maxProperties", map[string]any{"image": "nginx", "labels": map[string]any{"a": "1", "b": "2", "c": "3"}}),
		invalid("additionalProperties type", map[string]any{"image": "nginx", "labels": map[string]any{"a": int64(1)}}),
		invalid("non-nullable null", map[string]any{"image": nil}),
		invalid("date-time", map[string]any{"image": "nginx", "when": "yesterday"}),
		invalid("int-or-string", map[string]any{"image": "nginx", "size": true}),
		invalid("embedded without kind", map[string]any{"image": "nginx", "template": map[string]any{"spec": map[string]any{}}}),
		invalid("several at once", map[string]any{"image": "NGINX", "replicas": int64(11), "mode": "x", "tags": []any{}}),
	}
	getFull := func(things dynamic.ResourceInterface) *unstructured.Unstructured {
		u, err := things.Get(ctx, "full", metav1.GetOptions{})
		require.NoError(t, err)
		return u
	}
	steps = append(steps,
		schemaStep{name: "update dropping a defaulted field", check: true, do: func(things dynamic.ResourceInterface) (*unstructured.Unstructured, error) {
			u := getFull(things)
			unstructured.RemoveNestedField(u.Object, "spec", "replicas")
			unstructured.RemoveNestedField(u.Object, "spec", "nested")
			_ = unstructured.SetNestedField(u.Object, "x", "spec", "bogus")
			return things.Update(ctx, u, metav1.UpdateOptions{})
		}},
		schemaStep{name: "invalid update", check: true, do: func(things dynamic.ResourceInterface) (*unstructured.Unstructured, error) {
			u := getFull(things)
			_ = unstructured.SetNestedField(u.Object, int64(99), "spec", "replicas")
			return things.Update(ctx, u, metav1.UpdateOptions{})
		}},
		schemaStep{name: "invalid merge patch", check: true, do: func(things dynamic.ResourceInterface) (*unstructured.Unstructured, error) {
			return things.Patch(ctx, "full", types.MergePatchType, []byte(`{"spec":{"mode":"medium","tags":["a","a"]}}`), metav1.PatchOptions{})
		}},
		schemaStep{name: "merge patch with null, defaulted", check: true, do: func(things dynamic.ResourceInterface) (*unstructured.Unstructured, error) {
			return things.Patch(ctx, "full", types.MergePatchType, []byte(`{"spec":{"mode":null,"bogus":1}}`), metav1.PatchOptions{})
		}},
		schemaStep{name: "invalid JSON patch", check: true, do: func(things dynamic.ResourceInterface) (*unstructured.Unstructured, error) {
			return things.Patch(ctx, "full", types.JSONPatchType, []byte(`[{"op":"remove","path":"/spec/image"}]`), metav1.PatchOptions{})
		}},
		schemaStep{name: "status update", check: true, do: func(things dynamic.ResourceInterface) (*unstructured.Unstructured, error) {
			u := getFull(things)
			u.Object["status"] = map[string]any{"ready": int64(2), "phase": "Running", "bogus": true}
			_ = unstructured.SetNestedField(u.Object, int64(5), "spec", "replicas") // ignored by /status
			return things.UpdateStatus(ctx, u, metav1.UpdateOptions{})
		}},
		schemaStep{name: "invalid status update", check: true, do: func(things dynamic.ResourceInterface) (*unstructured.Unstructured, error) {
			u := getFull(things)
			u.Object["status"] = map[string]any{"ready": int64(-1), "phase": "Gone"}
			return things.UpdateStatus(ctx, u, metav1.UpdateOptions{})
		}},
		schemaStep{name: "invalid status patch", check: true, do: func(things dynamic.ResourceInterface) (*unstructured.Unstructured, error) {
			return things.Patch(ctx, "full", types.MergePatchType, []byte(`{"status":{"ready":"x"}}`), metav1.PatchOptions{}, "status")
		}},
	)
	return steps
}

// schemaOutcome is what a step left: the returned object or the error, normalised so that
// the two back ends compare.
type schemaOutcome struct {
	Object map[string]any `json:",omitempty"`
	Stored map[string]any `json:",omitempty"`
	Code   int32          `json:",omitempty"`
	Reason metav1.StatusReason
	Causes []string `json:",omitempty"`
}

func normaliseObject(u *unstructured.Unstructured) map[string]any {
	if u == nil {
		return nil
	}
	o := u.DeepCopy().Object
	md, _ := o["metadata"].(map[string]any)
	for _, k := range []string{"uid", "creationTimestamp", "resourceVersion", "managedFields", "namespace"} {
		delete(md, k)
	}
	return o
}

func outcome(u *unstructured.Unstructured, err error) schemaOutcome {
	if err == nil {
		return schemaOutcome{Object: normaliseObject(u)}
	}
	var out schemaOutcome
	st, ok := err.(apierrors.APIStatus)
	if !ok {
		return schemaOutcome{Reason: metav1.StatusReason("not a status error: " + err.Error())}
	}
	s := st.Status()
	out.Code, out.Reason = s.Code, s.Reason
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			out.Causes = append(out.Causes, fmt.Sprintf("%s %s", c.Field, c.Type))
		}
	}
	sort.Strings(out.Causes)
	return out
}

// TestSchemaMatchesAPIServer runs the same writes on the fake (serving the CRD from
// FakeOptions.CRDs) and on kube-apiserver, and compares what each answered: the returned
// objects (but for UIDs, timestamps, resourceVersions and namespaces), error codes and
// reasons, and the field paths and types of the causes.
func TestSchemaMatchesAPIServer(t *testing.T) {
	fake := testkit.NewFakeWithOptions(t, testkit.FakeOptions{CRDs: [][]byte{[]byte(thingCRD)}}).Env
	server := testkit.SharedAPIServer(t)
	require.NoError(t, customresource.EnsureCRDFromYAML(server.Context(), server.Dynamic(), []byte(thingCRD)))

	results := map[string][]schemaOutcome{}
	messages := map[string][]string{}
	for name, env := range map[string]*testkit.Env{"fake": fake, "apiserver": server} {
		things := env.Dynamic().Resource(thingsGVR).Namespace(env.Namespace())
		for _, step := range schemaSteps(t, env) {
			u, err := step.do(things)
			o := outcome(u, err)
			if step.check {
				stored, gerr := things.Get(env.Context(), "full", metav1.GetOptions{})
				require.NoError(t, gerr)
				o.Stored = normaliseObject(stored)
			}
			results[name] = append(results[name], o)
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			messages[name] = append(messages[name], msg)
		}
	}
	steps := schemaSteps(t, fake)
	require.Len(t, results["fake"], len(steps))
	require.Len(t, results["apiserver"], len(steps))
	for i, step := range steps {
		want, got := results["apiserver"][i], results["fake"][i]
		// Compared as Go values, so that an int64 on one side and a float64 on the other differ.
		if !assert.Equal(t, want, got, "step %q: apiserver (want) and fake (got) differ:\n%s\n%s", step.name, js(want), js(got)) {
			continue
		}
		if messages["apiserver"][i] != messages["fake"][i] {
			t.Logf("step %q: messages differ:\n  apiserver: %s\n  fake:      %s", step.name, messages["apiserver"][i], messages["fake"][i])
		}
	}
}

func js(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// A CRD whose schema is not structural is refused by both, 422 Invalid, naming the field.
func TestNonStructuralCRDMatchesAPIServer(t *testing.T) {
	bad := strings.NewReplacer("things", "badthings", "kind: Thing", "kind: BadThing", "ThingList", "BadThingList", "thing}", "badthing}",
		"          spec:\n            type: object\n", "          spec:\n").Replace(thingCRD)
	require.NotEqual(t, thingCRD, bad)
	for name, env := range map[string]*testkit.Env{
		"fake":      testkit.NewFake(t).Env,
		"apiserver": testkit.SharedAPIServer(t),
	} {
		t.Run(name, func(t *testing.T) {
			err := customresource.EnsureCRDFromYAML(env.Context(), env.Dynamic(), []byte(bad))
			require.Error(t, err)
			var st apierrors.APIStatus
			require.ErrorAs(t, err, &st)
			assert.Equal(t, metav1.StatusReasonInvalid, st.Status().Reason, "%v", err)
			var fields []string
			for _, c := range st.Status().Details.Causes {
				fields = append(fields, c.Field)
			}
			assert.Contains(t, fields, "spec.validation.openAPIV3Schema.properties[spec].type", "%v", err)
		})
	}
}
