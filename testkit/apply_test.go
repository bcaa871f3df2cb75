package testkit_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

var (
	configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	doohickeysGVR = schema.GroupVersionResource{Group: "apply.ctrlkit.dev", Version: "v1", Resource: "doohickeys"}
)

const doohickeyCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: doohickeys.apply.ctrlkit.dev
spec:
  group: apply.ctrlkit.dev
  names: {kind: Doohickey, listKind: DoohickeyList, plural: doohickeys, singular: doohickey}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// applyBackends are the two back ends a differential test runs on.
func applyBackends() map[string]func(t *testing.T) *testkit.Env {
	return map[string]func(t *testing.T) *testkit.Env{
		"fake": func(t *testing.T) *testkit.Env {
			return testkit.NewFakeWithOptions(t, testkit.FakeOptions{Resources: []fakecluster.Resource{
				{GVR: doohickeysGVR, Kind: "Doohickey", Namespaced: true, StatusSubresource: true}}}).Env
		},
		"apiserver": func(t *testing.T) *testkit.Env {
			env := testkit.SharedAPIServer(t)
			require.NoError(t, customresource.EnsureCRDFromYAML(env.Context(), env.Dynamic(), []byte(doohickeyCRD)))
			return env
		},
	}
}

// transcript records what each step of a scenario answered, normalised so that two back ends
// can be compared: server-assigned values (uid, timestamps, resourceVersion values, the
// namespace's name) are replaced by placeholders, managedFields are sorted and keep manager,
// operation, apiVersion, subresource and fieldsV1.
type transcript struct {
	ns    string
	steps []string
}

func (tr *transcript) record(t *testing.T, step string, obj *unstructured.Unstructured, err error) {
	t.Helper()
	if err != nil {
		tr.steps = append(tr.steps, step+": "+describeError(err, tr.ns))
		return
	}
	b, jerr := json.MarshalIndent(normalise(obj, tr.ns), "", "  ")
	require.NoError(t, jerr)
	tr.steps = append(tr.steps, step+": "+string(b))
}

func describeError(err error, ns string) string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return "error (no API status): " + err.Error()
	}
	s := status.Status()
	var causes []string
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			causes = append(causes, fmt.Sprintf("%s|%s|%s", c.Type, c.Field, c.Message))
		}
	}
	return strings.ReplaceAll(fmt.Sprintf("error %d %s %q causes=%q", s.Code, s.Reason, s.Message, causes), ns, "NS")
}

func normalise(obj *unstructured.Unstructured, ns string) map[string]any {
	u := obj.DeepCopy()
	md := u.Object["metadata"].(map[string]any)
	for _, k := range []string{"uid", "creationTimestamp", "resourceVersion"} {
		if _, ok := md[k]; ok {
			md[k] = "<" + k + ">"
		}
	}
	if u.GetKind() == "ConfigMap" {
		// The fake gives every object a generation; kube-apiserver gives ConfigMaps none (a
		// divergence older than apply, outside this test).
		delete(md, "generation")
	}
	if md["namespace"] == ns {
		md["namespace"] = "NS"
	}
	entries := u.GetManagedFields()
	slices.SortFunc(entries, func(a, b metav1.ManagedFieldsEntry) int {
		return strings.Compare(a.Manager+"/"+string(a.Operation)+"/"+a.Subresource, b.Manager+"/"+string(b.Operation)+"/"+b.Subresource)
	})
	var mf []any
	for _, e := range entries {
		var fields any
		if e.FieldsV1 != nil {
			_ = json.Unmarshal(e.FieldsV1.Raw, &fields)
		}
		mf = append(mf, map[string]any{
			"manager": e.Manager, "operation": string(e.Operation), "apiVersion": e.APIVersion,
			"subresource": e.Subresource, "fieldsType": e.FieldsType, "fieldsV1": fields, "time": e.Time != nil,
		})
	}
	if mf != nil {
		md["managedFields"] = mf
	}
	return u.Object
}

func cm(name string, data map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name}}}
	if data != nil {
		u.Object["data"] = data
	}
	return u
}

func doohickey(name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apply.ctrlkit.dev/v1", "kind": "Doohickey",
		"metadata": map[string]any{"name": name}}}
	for k, v := range fields {
		u.Object[k] = v
	}
	return u
}

// applyScenario runs the same sequence of applies, updates and patches on env and returns its
// transcript.
func applyScenario(t *testing.T, env *testkit.Env) []string {
	ctx, ns := env.Context(), env.Namespace()
	tr := &transcript{ns: ns}
	cms := env.Dynamic().Resource(configMapsGVR).Namespace(ns)
	apply := func(res dynamic.ResourceInterface, obj *unstructured.Unstructured, manager string, force bool, sub ...string) (*unstructured.Unstructured, error) {
		return res.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: manager, Force: force}, sub...)
	}

	// Apply creates; a second manager conflicts on a field the first owns, shares a field it
	// sets to the same value, and takes it by force.
	got, err := apply(cms, cm("cfg", map[string]any{"a": "1", "s": "x"}), "alice", false)
	tr.record(t, "alice creates", got, err)
	got, err = apply(cms, cm("cfg", map[string]any{"a": "2"}), "bob", false)
	tr.record(t, "bob conflicts", got, err)
	got, err = apply(cms, cm("cfg", map[string]any{"b": "1", "s": "x"}), "bob", false)
	tr.record(t, "bob adds b and shares s", got, err)
	got, err = apply(cms, cm("cfg", map[string]any{"a": "2", "b": "1", "s": "x"}), "bob", true)
	tr.record(t, "bob forces a", got, err)
	// alice no longer applies s: bob still does, so it stays; bob then drops b: it goes.
	got, err = apply(cms, cm("cfg", map[string]any{}), "alice", false)
	tr.record(t, "alice applies nothing", got, err)
	got, err = apply(cms, cm("cfg", map[string]any{"a": "2", "s": "x"}), "bob", false)
	tr.record(t, "bob drops b", got, err)

	// An update records operation Update, and an applier then conflicts with it.
	cur, err := cms.Get(ctx, "cfg", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(cur.Object, "u", "data", "u"))
	got, err = cms.Update(ctx, cur, metav1.UpdateOptions{FieldManager: "editor"})
	tr.record(t, "editor updates", got, err)
	got, err = cms.Patch(ctx, "cfg", types.MergePatchType, []byte(`{"data":{"p":"1"}}`), metav1.PatchOptions{FieldManager: "patcher"})
	tr.record(t, "patcher patches", got, err)
	got, err = cms.Patch(ctx, "cfg", types.MergePatchType, []byte(`{"data":{"q":"1"}}`), metav1.PatchOptions{})
	tr.record(t, "patch without a manager", got, err)
	got, err = apply(cms, cm("cfg", map[string]any{"u": "mine", "p": "1"}), "carol", false)
	tr.record(t, "carol conflicts with two updaters", got, err)

	// A resourceVersion in the configuration is a precondition.
	stale := cm("cfg", map[string]any{"a": "2", "s": "x"})
	stale.SetResourceVersion(got2rv(t, cur))
	got, err = apply(cms, stale, "bob", false)
	tr.record(t, "bob applies a stale resourceVersion", got, err)

	// Requests the server refuses.
	got, err = apply(cms, cm("cfg", map[string]any{"a": "3"}), "", false)
	tr.record(t, "apply without a field manager", got, err)
	got, err = cms.Patch(ctx, "cfg", types.ApplyPatchType, []byte(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": [`), metav1.PatchOptions{FieldManager: "m"})
	tr.record(t, "an apply body that does not decode", got, err)
	got, err = apply(cms, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cfg", "managedFields": []any{map[string]any{"manager": "x"}}}}}, "m", false)
	tr.record(t, "managedFields in the configuration", got, err)
	got, err = cms.Patch(ctx, "cfg", types.ApplyPatchType, []byte(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "managedFields": [{"manager": "x"}]}}`), metav1.PatchOptions{FieldManager: "m"})
	tr.record(t, "managedFields in the body", got, err)
	got, err = apply(cms, cm("cfg", map[string]any{"a": int64(3)}), "m", false)
	tr.record(t, "a value of the wrong type", got, err)
	got, err = apply(cms, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cfg"}, "spec": map[string]any{"x": "y"}}}, "m", false)
	tr.record(t, "a field the kind lacks", got, err)
	absent := cm("absent", map[string]any{"a": "1"})
	absent.SetResourceVersion("1")
	got, err = apply(cms, absent, "m", false)
	tr.record(t, "a resourceVersion when creating", got, err)
	got, err = apply(cms, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v2", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cfg"}}}, "m", false)
	tr.record(t, "a configuration of another version", got, err)
	got, err = cms.Patch(ctx, "cfg", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{Force: new(true)})
	tr.record(t, "force with a merge patch", got, err)

	// A create records the request's manager, or the default one.
	created, err := cms.Create(ctx, cm("created", map[string]any{"k": "v"}), metav1.CreateOptions{FieldManager: "creator"})
	tr.record(t, "create with a manager", created, err)
	created, err = cms.Create(ctx, cm("created2", map[string]any{"k": "v"}), metav1.CreateOptions{})
	tr.record(t, "create without a manager", created, err)
	got, err = apply(cms, cm("created", map[string]any{"k": "w"}), "applier", false)
	tr.record(t, "apply after create conflicts", got, err)

	// A custom resource with a status subresource: status is dropped on create, applied through
	// /status by another manager, and spec changes bump generation.
	dhs := env.Dynamic().Resource(doohickeysGVR).Namespace(ns)
	got, err = apply(dhs, doohickey("d", map[string]any{"spec": map[string]any{"size": int64(1), "color": "red"}, "status": map[string]any{"phase": "Fake"}}), "ctrl", false)
	tr.record(t, "ctrl creates a doohickey", got, err)
	got, err = apply(dhs, doohickey("d", map[string]any{"status": map[string]any{"phase": "Ready", "replicas": int64(1)}}), "status-writer", false, "status")
	tr.record(t, "status-writer applies status", got, err)
	got, err = apply(dhs, doohickey("d", map[string]any{"spec": map[string]any{"size": int64(2), "color": "red"}, "status": map[string]any{"phase": "Ignored"}}), "ctrl", false)
	tr.record(t, "ctrl changes spec", got, err)
	got, err = apply(dhs, doohickey("d", map[string]any{"spec": map[string]any{"size": int64(3)}}), "scaler", false)
	tr.record(t, "scaler conflicts", got, err)
	got, err = apply(dhs, doohickey("d", map[string]any{"spec": map[string]any{"size": int64(2)}}), "ctrl", false)
	tr.record(t, "ctrl drops color", got, err)
	got, err = apply(dhs, doohickey("d", map[string]any{"status": map[string]any{"phase": "Done"}}), "status-writer", false, "status")
	tr.record(t, "status-writer drops replicas", got, err)
	got, err = apply(dhs, doohickey("absent", map[string]any{"status": map[string]any{"phase": "Done"}}), "status-writer", false, "status")
	tr.record(t, "status apply to an absent object", got, err)
	got, err = apply(dhs, doohickey("d", map[string]any{"spec": map[string]any{"list": []any{"a", "b"}}}), "lister", false)
	tr.record(t, "lister applies a list", got, err)
	got, err = apply(dhs, doohickey("d", map[string]any{"spec": map[string]any{"list": []any{"c"}}}), "other-lister", true)
	tr.record(t, "other-lister replaces the list by force (atomic)", got, err)
	return tr.steps
}

func got2rv(t *testing.T, obj *unstructured.Unstructured) string {
	t.Helper()
	require.NotEmpty(t, obj.GetResourceVersion())
	return obj.GetResourceVersion()
}

// Server-side apply on the fake cluster answers as kube-apiserver does: the same objects, the
// same managedFields (managers, operations, field sets) and the same errors, step by step.
func TestApplyMatchesAPIServer(t *testing.T) {
	results := map[string][]string{}
	for name, newEnv := range applyBackends() {
		t.Run(name, func(t *testing.T) {
			results[name] = applyScenario(t, newEnv(t))
		})
	}
	fake, server := results["fake"], results["apiserver"]
	if fake == nil || server == nil {
		t.Skip("a back end did not run")
	}
	require.Len(t, fake, len(server))
	for i := range server {
		assert.Equal(t, server[i], fake[i], "step %d", i)
	}
}
