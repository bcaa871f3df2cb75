package testkit_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/ctrlkit/ctrlkit/testkit"
)

// The differential harness: seeded random sequences of writes, reads and watches, run on the
// fake cluster and on a real kube-apiserver side by side, compared after every operation. What
// legitimately differs is normalised away (UIDs, timestamps, resourceVersion values but not
// their order, defaults of built-in kinds the fake does not model); everything else (the
// objects, error codes and reasons, which writes change the resourceVersion, what lists and
// watches return) must agree. A divergence fails the test with a one-line reproduction.
var (
	diffSequences = flag.Int("diff.sequences", 500, "differential harness: random sequences per run")
	diffOps       = flag.Int("diff.ops", 30, "differential harness: operations per sequence")
	diffSeed      = flag.Uint64("diff.seed", 0, "differential harness: run only this sequence's seed")
	// A fixed base keeps make test reproducible; 0 draws new sequences on every run, for
	// the longer runs that look for what the fixed ones miss.
	diffBase = flag.Uint64("diff.base", 0x6374726c6b6974, "differential harness: seed of the first sequence (0: from the clock)")
)

const diffGroup = "diff.ctrlkit.test"

// diffKind is one resource the harness writes: how to build, change and compare its objects.
type diffKind struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
	status     bool // has a status subresource
	// body is the payload of a new object for value v (everything but metadata, apiVersion, kind).
	body func(v int) map[string]any
	// change sets the payload for value v on obj (a no-op when obj already has it).
	change func(obj map[string]any, v int)
	// mergePatch is a merge patch setting the payload for v.
	mergePatch func(v int) map[string]any
	// setStatus sets a status for value v (kinds with a status subresource).
	setStatus func(obj map[string]any, v int)
	// project keeps the payload fields the comparison looks at.
	project func(obj map[string]any) map[string]any
}

func diffKinds() []*diffKind {
	keepAll := func(obj map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range obj {
			if k != "metadata" {
				out[k] = v
			}
		}
		return out
	}
	specSize := func(v int) map[string]any { return map[string]any{"spec": map[string]any{"size": int64(v % 4)}} }
	return []*diffKind{
		{
			gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, kind: "ConfigMap", namespaced: true,
			body:       func(v int) map[string]any { return map[string]any{"data": map[string]any{"k": strconv.Itoa(v % 4)}} },
			change:     func(obj map[string]any, v int) { obj["data"] = map[string]any{"k": strconv.Itoa(v % 4)} },
			mergePatch: func(v int) map[string]any { return map[string]any{"data": map[string]any{"k": strconv.Itoa(v % 4)}} },
			project:    keepAll,
		},
		{
			// stringData on a write, data on a read: the API server converts one into the other.
			gvr: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, kind: "Secret", namespaced: true,
			body: func(v int) map[string]any {
				if v%2 == 0 {
					return map[string]any{"stringData": map[string]any{"k": strconv.Itoa(v % 4)}}
				}
				return map[string]any{"data": map[string]any{"k": base64.StdEncoding.EncodeToString([]byte(strconv.Itoa(v % 4)))}}
			},
			change: func(obj map[string]any, v int) {
				obj["data"] = map[string]any{"k": base64.StdEncoding.EncodeToString([]byte(strconv.Itoa(v % 4)))}
			},
			mergePatch: func(v int) map[string]any {
				return map[string]any{"stringData": map[string]any{"k": strconv.Itoa(v % 4)}}
			},
			project: keepAll,
		},
		{
			// The server defaults many fields of a Deployment that the fake does not; only the
			// fields the harness sets, and the status, are compared.
			gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, kind: "Deployment",
			namespaced: true, status: true,
			body: func(v int) map[string]any {
				return map[string]any{"spec": map[string]any{
					"replicas": int64(v % 3),
					"selector": map[string]any{"matchLabels": map[string]any{"app": "diff"}},
					"template": map[string]any{
						"metadata": map[string]any{"labels": map[string]any{"app": "diff"}},
						"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox"}}},
					},
				}}
			},
			change: func(obj map[string]any, v int) {
				_ = unstructured.SetNestedField(obj, int64(v%3), "spec", "replicas")
			},
			mergePatch: func(v int) map[string]any {
				return map[string]any{"spec": map[string]any{"replicas": int64(v % 3)}}
			},
			setStatus: func(obj map[string]any, v int) {
				obj["status"] = map[string]any{"replicas": int64(v % 3), "observedGeneration": int64(v % 2)}
			},
			project: func(obj map[string]any) map[string]any {
				out := map[string]any{}
				if r, ok, _ := unstructured.NestedFieldCopy(obj, "spec", "replicas"); ok {
					out["replicas"] = r
				}
				if p, ok, _ := unstructured.NestedFieldCopy(obj, "spec", "paused"); ok {
					out["paused"] = p
				}
				if s, ok := obj["status"]; ok {
					out["status"] = s
				}
				return out
			},
		},
		{
			// An unscheduled Pod: deleted at once (no grace period without a node). The server
			// defaults much of a Pod and sets its QoS class; only the image, the phase and the
			// status message are compared.
			gvr: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, kind: "Pod", namespaced: true, status: true,
			body: func(v int) map[string]any {
				return map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox:" + strconv.Itoa(v%4)}}}}
			},
			change: func(obj map[string]any, v int) {
				containers, _, _ := unstructured.NestedSlice(obj, "spec", "containers")
				if len(containers) > 0 {
					containers[0].(map[string]any)["image"] = "busybox:" + strconv.Itoa(v%4)
					_ = unstructured.SetNestedSlice(obj, containers, "spec", "containers")
				}
			},
			mergePatch: func(v int) map[string]any {
				return map[string]any{"metadata": map[string]any{"annotations": map[string]any{"m": strconv.Itoa(v % 3)}}}
			},
			setStatus: func(obj map[string]any, v int) {
				_ = unstructured.SetNestedField(obj, "m"+strconv.Itoa(v%3), "status", "message")
			},
			project: func(obj map[string]any) map[string]any {
				out := map[string]any{}
				if c, ok, _ := unstructured.NestedSlice(obj, "spec", "containers"); ok && len(c) > 0 {
					out["image"] = c[0].(map[string]any)["image"]
				}
				for _, f := range []string{"phase", "message"} {
					if v, ok, _ := unstructured.NestedString(obj, "status", f); ok {
						out[f] = v
					}
				}
				return out
			},
		},
		{
			gvr: schema.GroupVersionResource{Group: diffGroup, Version: "v1", Resource: "widgets"}, kind: "Widget",
			namespaced: true, status: true,
			body:       specSize,
			change:     func(obj map[string]any, v int) { obj["spec"] = specSize(v)["spec"] },
			mergePatch: specSize,
			setStatus:  func(obj map[string]any, v int) { obj["status"] = map[string]any{"ready": v%2 == 0} },
			project:    keepAll,
		},
		{
			gvr: schema.GroupVersionResource{Group: diffGroup, Version: "v1", Resource: "gizmos"}, kind: "Gizmo",
			body:       specSize,
			change:     func(obj map[string]any, v int) { obj["spec"] = specSize(v)["spec"] },
			mergePatch: specSize,
			project:    keepAll,
		},
	}
}

// diffCRDs declare the harness's custom resources: a namespaced one with a status subresource
// and a cluster-scoped one without, both keeping every field.
func diffCRDs() []*unstructured.Unstructured {
	crd := func(plural, kind, scope string, status bool) *unstructured.Unstructured {
		version := map[string]any{
			"name": "v1", "served": true, "storage": true,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
		}
		if status {
			version["subresources"] = map[string]any{"status": map[string]any{}}
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": plural + "." + diffGroup},
			"spec": map[string]any{
				"group": diffGroup, "scope": scope,
				"names":    map[string]any{"plural": plural, "singular": strings.ToLower(kind), "kind": kind, "listKind": kind + "List"},
				"versions": []any{version},
			},
		}}
	}
	return []*unstructured.Unstructured{crd("widgets", "Widget", "Namespaced", true), crd("gizmos", "Gizmo", "Cluster", false)}
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// diffOp is one operation, with every random choice made before it runs, so that both back ends
// run exactly the same one.
type diffOp struct {
	verb string
	kind int
	name string
	v    int // the payload's value
	flag int // the verb's variant
}

func (o diffOp) String() string {
	return fmt.Sprintf("%s kind=%d name=%s v=%d flag=%d", o.verb, o.kind, o.name, o.v, o.flag)
}

var diffVerbs = []struct {
	verb   string
	weight int
}{
	{"create", 6}, {"get", 2}, {"update", 5}, {"updateUnchanged", 2}, {"updateStale", 3}, {"updateWithoutRV", 2},
	{"mergePatch", 4}, {"jsonPatch", 3}, {"strategicPatch", 2}, {"updateStatus", 3}, {"patchStatus", 2},
	{"addFinalizer", 3}, {"removeFinalizers", 3}, {"delete", 5}, {"list", 3}, {"listPaged", 2}, {"apply", 5},
}

func randomOps(seed uint64, n, kinds int) []diffOp {
	r := rand.New(rand.NewPCG(seed, seed^0x5bd1e995))
	total := 0
	for _, v := range diffVerbs {
		total += v.weight
	}
	ops := make([]diffOp, n)
	for i := range ops {
		w := r.IntN(total)
		verb := ""
		for _, v := range diffVerbs {
			if w < v.weight {
				verb = v.verb
				break
			}
			w -= v.weight
		}
		ops[i] = diffOp{verb: verb, kind: r.IntN(kinds), name: "o" + strconv.Itoa(r.IntN(3)), v: r.IntN(12), flag: r.IntN(12)}
	}
	return ops
}

// diffBackend is one cluster the harness runs on, with what it remembered of the sequence's
// objects so far: each object's resourceVersion and UID when it was created.
type diffBackend struct {
	name    string
	dyn     dynamic.Interface
	ns      string
	seq     string // the sequence's label value and name prefix
	firstRV map[string]string
	uid     map[string]string
	lastRV  int64 // the highest resourceVersion a write returned, for the order check
	watches []watch.Interface
}

func (b *diffBackend) resource(k *diffKind) dynamic.ResourceInterface {
	if k.namespaced {
		return b.dyn.Resource(k.gvr).Namespace(b.ns)
	}
	return b.dyn.Resource(k.gvr)
}

func (b *diffBackend) objName(o diffOp) string { return b.seq + "-" + o.name }

func (b *diffBackend) memo(o diffOp) string { return strconv.Itoa(o.kind) + "/" + o.name }

// diffOutcome is what an operation returned, normalised: comparable across back ends.
type diffOutcome struct {
	Err       string           `json:"err,omitempty"`
	Object    map[string]any   `json:"object,omitempty"`
	Items     []map[string]any `json:"items,omitempty"`
	RVChanged *bool            `json:"rvChanged,omitempty"` // for writes: did the resourceVersion move
	After     *diffOutcome     `json:"after,omitempty"`     // a read after a delete
}

// errOutcome is code's answer and, for a 422, the fields of its causes.
func errOutcome(err error) string {
	out := code(err)
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Reason == metav1.StatusReasonInvalid && st.Status().Details != nil {
		var fields []string
		for _, c := range st.Status().Details.Causes {
			fields = append(fields, c.Field)
		}
		slices.Sort(fields)
		out += " " + strings.Join(fields, ",")
	}
	return out
}

// normalise keeps what must agree between back ends: identity, labels, annotations,
// finalizers, generation, whether the object is being deleted, and the kind's payload.
func (b *diffBackend) normalise(k *diffKind, u *unstructured.Unstructured) map[string]any {
	md := map[string]any{"name": strings.TrimPrefix(u.GetName(), b.seq+"-")}
	if k.namespaced {
		md["namespaced"] = u.GetNamespace() == b.ns
	}
	if l := u.GetLabels(); len(l) > 0 {
		md["labels"] = l
	}
	if a := u.GetAnnotations(); len(a) > 0 {
		md["annotations"] = a
	}
	if f := u.GetFinalizers(); len(f) > 0 {
		md["finalizers"] = f
	}
	md["generation"] = u.GetGeneration()
	md["deleting"] = u.GetDeletionTimestamp() != nil
	if g := u.GetDeletionGracePeriodSeconds(); g != nil {
		md["deletionGracePeriodSeconds"] = *g
	}
	md["hasUID"] = u.GetUID() != ""
	ct := u.GetCreationTimestamp()
	md["hasCreationTimestamp"] = !ct.IsZero()
	out := k.project(u.Object)
	delete(out, "apiVersion")
	delete(out, "kind")
	out["metadata"] = md
	out["_kind"] = u.GetAPIVersion() + " " + u.GetKind()
	return out
}

// wrote records a successful write's resourceVersion: it must be above every earlier one.
func (b *diffBackend) wrote(u *unstructured.Unstructured) error {
	rv, err := strconv.ParseInt(u.GetResourceVersion(), 10, 64)
	if err != nil {
		return fmt.Errorf("%s: resourceVersion %q is not an integer: %w", b.name, u.GetResourceVersion(), err)
	}
	if rv <= b.lastRV {
		return fmt.Errorf("%s: a write returned resourceVersion %d, not above the previous write's %d", b.name, rv, b.lastRV)
	}
	b.lastRV = rv
	return nil
}

// run runs o and returns its outcome; an error is the harness's own failure (or a broken
// invariant such as the resourceVersion order), not the operation's.
func (b *diffBackend) run(ctx context.Context, kinds []*diffKind, o diffOp) (diffOutcome, error) {
	k := kinds[o.kind]
	res := b.resource(k)
	name := b.objName(o)
	// write finishes a write whose previous resourceVersion was before ("" for none).
	write := func(u *unstructured.Unstructured, err error, before string) (diffOutcome, error) {
		if err != nil {
			return diffOutcome{Err: errOutcome(err)}, nil
		}
		changed := u.GetResourceVersion() != before
		out := diffOutcome{Object: b.normalise(k, u), RVChanged: &changed}
		if changed {
			return out, b.wrote(u)
		}
		return out, nil
	}
	get := func() (*unstructured.Unstructured, *diffOutcome) {
		u, err := res.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, &diffOutcome{Err: "get: " + errOutcome(err)}
		}
		return u, nil
	}
	patch := func(pt types.PatchType, body any, sub ...string) (diffOutcome, error) {
		data, err := json.Marshal(body)
		if err != nil {
			return diffOutcome{}, err
		}
		before := ""
		if cur, failed := get(); failed == nil {
			before = cur.GetResourceVersion()
		}
		u, err := res.Patch(ctx, name, pt, data, metav1.PatchOptions{}, sub...)
		return write(u, err, before)
	}

	switch o.verb {
	case "create":
		u := &unstructured.Unstructured{Object: k.body(o.v)}
		u.SetAPIVersion(k.gvr.GroupVersion().String())
		u.SetKind(k.kind)
		u.SetName(name)
		u.SetLabels(map[string]string{"seq": b.seq, "v": strconv.Itoa(o.v % 3)})
		if o.flag%3 == 0 {
			u.SetFinalizers([]string{diffGroup + "/keep"})
		}
		if o.flag%4 == 1 {
			u.SetAnnotations(map[string]string{"note": "created"})
		}
		if k.status && o.flag%5 == 2 { // dropped on create by a status subresource
			k.setStatus(u.Object, o.v)
		}
		created, err := res.Create(ctx, u, metav1.CreateOptions{})
		out, werr := write(created, err, "")
		if err == nil {
			b.firstRV[b.memo(o)] = created.GetResourceVersion()
			b.uid[b.memo(o)] = string(created.GetUID())
		}
		return out, werr
	case "get":
		u, failed := get()
		if failed != nil {
			return *failed, nil
		}
		return diffOutcome{Object: b.normalise(k, u)}, nil
	case "update", "updateUnchanged", "updateStale", "updateWithoutRV":
		u, failed := get()
		if failed != nil {
			return *failed, nil
		}
		before := u.GetResourceVersion()
		if o.verb != "updateUnchanged" {
			k.change(u.Object, o.v)
			if o.flag%3 == 0 {
				labels := u.GetLabels()
				labels["u"] = strconv.Itoa(o.v % 2)
				u.SetLabels(labels)
			}
		}
		switch o.verb {
		case "updateStale":
			u.SetResourceVersion(b.firstRV[b.memo(o)])
		case "updateWithoutRV":
			u.SetResourceVersion("")
		}
		updated, err := res.Update(ctx, u, metav1.UpdateOptions{})
		return write(updated, err, before)
	case "mergePatch":
		body := k.mergePatch(o.v)
		if o.flag%3 == 0 { // the resourceVersion at creation as a precondition
			body["metadata"] = map[string]any{"resourceVersion": b.firstRV[b.memo(o)]}
		}
		return patch(types.MergePatchType, body)
	case "jsonPatch":
		ops := []any{map[string]any{"op": "add", "path": "/metadata/labels/j", "value": strconv.Itoa(o.v % 3)}}
		switch o.flag % 4 {
		case 0: // a test that fails: nothing is written
			ops = append([]any{map[string]any{"op": "test", "path": "/metadata/labels/seq", "value": "other"}}, ops...)
		case 1: // a path that does not exist
			ops = append(ops, map[string]any{"op": "replace", "path": "/metadata/annotations/missing", "value": "x"})
		}
		return patch(types.JSONPatchType, ops)
	case "strategicPatch":
		return patch(types.StrategicMergePatchType, map[string]any{"metadata": map[string]any{"labels": map[string]any{"s": strconv.Itoa(o.v % 3)}}})
	case "updateStatus":
		u, failed := get()
		if failed != nil {
			return *failed, nil
		}
		before := u.GetResourceVersion()
		if k.setStatus != nil {
			k.setStatus(u.Object, o.v)
		} else {
			u.Object["status"] = map[string]any{"ready": true}
		}
		if o.flag%4 == 0 { // a spec change through status is ignored
			k.change(u.Object, o.v+1)
		}
		updated, err := res.UpdateStatus(ctx, u, metav1.UpdateOptions{})
		return write(updated, err, before)
	case "patchStatus":
		st := map[string]any{}
		if k.setStatus != nil {
			k.setStatus(st, o.v)
		} else {
			st["status"] = map[string]any{"ready": true}
		}
		return patch(types.MergePatchType, st, "status")
	case "apply":
		// Two field managers, forced or not: conflicts, shared and dropped ownership. The body
		// is a whole valid object (an apply may create it).
		body := k.body(o.v)
		if k.gvr.Resource == "secrets" {
			body = map[string]any{"data": map[string]any{"k": base64.StdEncoding.EncodeToString([]byte(strconv.Itoa(o.v % 4)))}}
		}
		u := &unstructured.Unstructured{Object: body}
		u.SetAPIVersion(k.gvr.GroupVersion().String())
		u.SetKind(k.kind)
		u.SetName(name)
		labels := map[string]string{"seq": b.seq}
		if o.flag%4 < 2 {
			labels["a"] = strconv.Itoa(o.v % 2)
		}
		u.SetLabels(labels)
		before := ""
		if cur, failed := get(); failed == nil {
			before = cur.GetResourceVersion()
		}
		applied, err := res.Apply(ctx, name, u, metav1.ApplyOptions{FieldManager: "diff-" + strconv.Itoa(o.flag%2), Force: o.flag%3 == 0})
		out, werr := write(applied, err, before)
		if err == nil && before == "" {
			b.firstRV[b.memo(o)] = applied.GetResourceVersion()
			b.uid[b.memo(o)] = string(applied.GetUID())
		}
		if err == nil {
			out.Object["managedFields"] = managers(applied)
		}
		return out, werr
	case "addFinalizer":
		return patch(types.MergePatchType, map[string]any{"metadata": map[string]any{
			"finalizers": []any{diffGroup + "/keep", diffGroup + "/f" + strconv.Itoa(o.v%2)}}})
	case "removeFinalizers":
		return patch(types.MergePatchType, map[string]any{"metadata": map[string]any{"finalizers": nil}})
	case "delete":
		var opts metav1.DeleteOptions
		switch o.flag % 6 {
		case 1:
			uid := types.UID(b.uid[b.memo(o)])
			opts.Preconditions = &metav1.Preconditions{UID: &uid}
		case 2:
			uid := types.UID("00000000-0000-0000-0000-000000000000")
			opts.Preconditions = &metav1.Preconditions{UID: &uid}
		case 3:
			rv := b.firstRV[b.memo(o)]
			opts.Preconditions = &metav1.Preconditions{ResourceVersion: &rv}
		case 4:
			opts.PropagationPolicy = new(metav1.DeletePropagationBackground)
		case 5:
			opts.PropagationPolicy = new(metav1.DeletePropagationOrphan)
		}
		out := diffOutcome{}
		if err := res.Delete(ctx, name, opts); err != nil {
			out.Err = errOutcome(err)
		}
		after := diffOutcome{}
		if u, failed := get(); failed != nil {
			after = *failed
		} else {
			after.Object = b.normalise(k, u)
		}
		out.After = &after
		return out, nil
	case "list", "listPaged":
		opts := metav1.ListOptions{LabelSelector: "seq=" + b.seq}
		switch o.flag % 3 {
		case 1:
			opts.LabelSelector += ",v=" + strconv.Itoa(o.v%3)
		case 2:
			opts.FieldSelector = "metadata.name=" + name
		}
		if o.verb == "listPaged" {
			opts.Limit = 1
		}
		// The items must agree, not the number of pages: the API server may end a page early, or
		// hand out a continue token for a page that turns out empty, as etcd's keys fall.
		out, pages := diffOutcome{Items: []map[string]any{}}, 0
		for {
			l, err := res.List(ctx, opts)
			if err != nil {
				return diffOutcome{Err: errOutcome(err)}, nil
			}
			pages++
			if pages > 100 {
				return diffOutcome{}, fmt.Errorf("%s: a paginated list of a few objects did not end after 100 pages", b.name)
			}
			for i := range l.Items {
				out.Items = append(out.Items, b.normalise(k, &l.Items[i]))
			}
			if l.GetContinue() == "" {
				break
			}
			opts.Continue = l.GetContinue()
		}
		return out, nil
	}
	return diffOutcome{}, fmt.Errorf("unknown verb %q", o.verb)
}

// startWatches watches every kind's objects of the sequence from now on.
func (b *diffBackend) startWatches(ctx context.Context, kinds []*diffKind) error {
	for _, k := range kinds {
		res := b.resource(k)
		l, err := res.List(ctx, metav1.ListOptions{LabelSelector: "seq=" + b.seq})
		if err != nil {
			return fmt.Errorf("%s: list %s: %w", b.name, k.gvr.Resource, err)
		}
		w, err := res.Watch(ctx, metav1.ListOptions{LabelSelector: "seq=" + b.seq, ResourceVersion: l.GetResourceVersion()})
		if err != nil {
			return fmt.Errorf("%s: watch %s: %w", b.name, k.gvr.Resource, err)
		}
		b.watches = append(b.watches, w)
	}
	return nil
}

// drainWatches writes a sentinel object of each kind and returns the events each watch
// delivered before the sentinel's: a watch delivers in resourceVersion order, so those are all
// of the sequence's.
func (b *diffBackend) drainWatches(ctx context.Context, kinds []*diffKind) ([][]string, error) {
	defer func() {
		for _, w := range b.watches {
			w.Stop()
		}
	}()
	out := make([][]string, len(kinds))
	for i, k := range kinds {
		sentinel := diffOp{verb: "create", kind: i, name: "sentinel", flag: 1}
		if _, err := b.run(ctx, kinds, sentinel); err != nil {
			return nil, err
		}
		timeout := time.After(30 * time.Second)
		for done := false; !done; {
			select {
			case ev, ok := <-b.watches[i].ResultChan():
				if !ok {
					return nil, fmt.Errorf("%s: the watch of %s closed before the sentinel", b.name, k.gvr.Resource)
				}
				u, isObj := ev.Object.(*unstructured.Unstructured)
				if !isObj {
					return nil, fmt.Errorf("%s: watch of %s: %s event with %T", b.name, k.gvr.Resource, ev.Type, ev.Object)
				}
				if u.GetName() == b.seq+"-sentinel" {
					done = true
					break
				}
				j, err := json.Marshal(b.normalise(k, u))
				if err != nil {
					return nil, err
				}
				out[i] = append(out[i], string(ev.Type)+" "+string(j))
			case <-timeout:
				return nil, fmt.Errorf("%s: no sentinel event on the watch of %s within 30s", b.name, k.gvr.Resource)
			}
		}
	}
	return out, nil
}

// ensureCRDs creates the harness's CRDs on a back end and waits until their resources answer.
func ensureCRDs(ctx context.Context, dyn dynamic.Interface, kinds []*diffKind) error {
	for _, crd := range diffCRDs() {
		if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating CRD %s: %w", crd.GetName(), err)
		}
	}
	for _, k := range kinds {
		if k.gvr.Group != diffGroup {
			continue
		}
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := dyn.Resource(k.gvr).List(ctx, metav1.ListOptions{Limit: 1})
			return err == nil, nil
		})
		if err != nil {
			return fmt.Errorf("custom resource %s not served: %w", k.gvr.Resource, err)
		}
	}
	return nil
}

// TestDifferentialFakeVersusAPIServer runs -diff.sequences random sequences of -diff.ops
// operations each on the fake and on kube-apiserver, and fails on the first divergence of each
// sequence, printing the command that replays it. A longer run:
//
//	CTRLKIT_REQUIRE_APISERVER=1 go test ./testkit -run TestDifferentialFakeVersusAPIServer -diff.base=0 -diff.sequences=5000 -diff.ops=60 -timeout=60m
func TestDifferentialFakeVersusAPIServer(t *testing.T) {
	server := testkit.SharedAPIServer(t)
	fake := testkit.NewFake(t)
	ctx := server.Context()
	kinds := diffKinds()
	require.NoError(t, ensureCRDs(ctx, server.Dynamic(), kinds), "apiserver")
	require.NoError(t, ensureCRDs(ctx, fake.Dynamic(), kinds), "fake")

	seeds := make([]uint64, 0, *diffSequences)
	if *diffSeed != 0 {
		seeds = append(seeds, *diffSeed)
	} else {
		base := *diffBase
		if base == 0 {
			base = uint64(time.Now().UnixNano())
		}
		for i := range *diffSequences {
			seeds = append(seeds, base+uint64(i)*0x9e3779b97f4a7c15)
		}
	}
	diverged, ops := 0, 0
	start := time.Now()
	for _, seed := range seeds {
		n, err := runSequence(ctx, seed, *diffOps, kinds, server, fake.Env)
		ops += n
		if err != nil {
			diverged++
			t.Errorf("sequence %d: %v\n  replay: CTRLKIT_REQUIRE_APISERVER=1 go test ./testkit -run TestDifferentialFakeVersusAPIServer -diff.seed=%d -diff.ops=%d -v",
				seed, err, seed, *diffOps)
			if diverged >= 5 {
				t.Fatalf("stopping after %d divergent sequences", diverged)
			}
		}
	}
	t.Logf("%d sequences, %d operations on each back end in %v; %d diverged", len(seeds), ops, time.Since(start).Round(time.Millisecond), diverged)
}

// runSequence runs one seed's operations on both back ends, comparing after each; it returns
// the number run and the first divergence.
func runSequence(ctx context.Context, seed uint64, n int, kinds []*diffKind, server, fake *testkit.Env) (int, error) {
	seq := "s" + strconv.FormatUint(seed%1e12, 36)
	backends := []*diffBackend{
		{name: "apiserver", dyn: server.Dynamic(), ns: server.Namespace(), seq: seq, firstRV: map[string]string{}, uid: map[string]string{}},
		{name: "fake", dyn: fake.Dynamic(), ns: fake.Namespace(), seq: seq, firstRV: map[string]string{}, uid: map[string]string{}},
	}
	for _, b := range backends {
		if err := b.startWatches(ctx, kinds); err != nil {
			return 0, err
		}
	}
	ops := randomOps(seed, n, len(kinds))
	for i, o := range ops {
		var outs [2]diffOutcome
		for j, b := range backends {
			out, err := b.run(ctx, kinds, o)
			if err != nil {
				return i, fmt.Errorf("op %d (%s): %w", i, o, err)
			}
			outs[j] = out
		}
		if !reflect.DeepEqual(roundTrip(outs[0]), roundTrip(outs[1])) {
			return i, fmt.Errorf("op %d (%s) diverged:\n  apiserver: %s\n  fake:      %s", i, o, jsonString(outs[0]), jsonString(outs[1]))
		}
	}
	var events [2][][]string
	for j, b := range backends {
		ev, err := b.drainWatches(ctx, kinds)
		if err != nil {
			return n, err
		}
		events[j] = ev
	}
	for i, k := range kinds {
		if !slices.Equal(events[0][i], events[1][i]) {
			return n, fmt.Errorf("watch events of %s diverged:\n  apiserver:\n    %s\n  fake:\n    %s", k.gvr.Resource,
				strings.Join(events[0][i], "\n    "), strings.Join(events[1][i], "\n    "))
		}
	}
	return n, nil
}

// roundTrip makes numbers comparable (int64 from one back end, float64 from the other's
// decoding) by passing an outcome through JSON.
func roundTrip(o diffOutcome) any {
	var v any
	_ = json.Unmarshal([]byte(jsonString(o)), &v)
	return v
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}

// managers are an object's field managers and their operations, sorted: which managers own
// fields must agree (the fieldsV1 sets are compared by the apply tests of package testkit).
func managers(u *unstructured.Unstructured) []string {
	var out []string
	for _, e := range u.GetManagedFields() {
		out = append(out, e.Manager+" "+string(e.Operation)+" "+e.Subresource)
	}
	slices.Sort(out)
	return out
}
