package sim

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// counts are the creates and deletes the processes made of one object.
type counts struct{ creates, deletes int }

// objectKey names an object the same way in every run: a generated name is its generateName
// followed by "*" (the suffix is drawn anew in each run).
func objectKey(gvr schema.GroupVersionResource, ns, name, generateName string) string {
	if generateName != "" && strings.HasPrefix(name, generateName) && len(name) > len(generateName) {
		name = generateName + "*"
	}
	return resourceString(gvr) + " " + nsName(ns, name)
}

// uidPattern matches a UID.
var uidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// masked are the metadata fields that differ between runs of the same history.
var masked = []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink"}

// normaliseEnd returns the end state as normalised JSON by object key, objects of a generated
// key numbered in the order of their JSON (#1, #2, ...): identities, resourceVersions,
// timestamps and generated suffixes (wherever they appear) masked.
func normaliseEnd(snap *fakecluster.Snapshot) map[string]string {
	objs := snap.Objects()
	generated := map[string]string{} // generated name → its mask
	for _, list := range objs {
		for _, o := range list {
			if m, err := meta.Accessor(o); err == nil && m.GetGenerateName() != "" && strings.HasPrefix(m.GetName(), m.GetGenerateName()) {
				generated[m.GetName()] = m.GetGenerateName() + "*"
			}
		}
	}
	byKey := map[string][]string{}
	for gvr, list := range objs {
		for _, o := range list {
			m, err := meta.Accessor(o)
			if err != nil || bookkeeping(gvr) {
				continue
			}
			key := objectKey(gvr, m.GetNamespace(), m.GetName(), m.GetGenerateName())
			byKey[key] = append(byKey[key], normalise(o, generated))
		}
	}
	out := map[string]string{}
	for key, docs := range byKey {
		if !strings.HasSuffix(key, "*") {
			out[key] = docs[0]
			continue
		}
		slices.Sort(docs)
		for i, d := range docs {
			out[fmt.Sprintf("%s #%d", key, i+1)] = d
		}
	}
	return out
}

// normalise renders obj as JSON with the fields that differ between runs masked.
func normalise(obj runtime.Object, generated map[string]string) string {
	var u map[string]any
	if un, ok := obj.(*unstructured.Unstructured); ok {
		u = runtime.DeepCopyJSON(un.Object)
	} else {
		var err error
		if u, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err != nil {
			return fmt.Sprintf("<%v>", err)
		}
	}
	if md, ok := u["metadata"].(map[string]any); ok {
		for _, f := range masked {
			delete(md, f)
		}
		if refs, ok := md["ownerReferences"].([]any); ok {
			for _, r := range refs {
				if rm, ok := r.(map[string]any); ok {
					delete(rm, "uid")
				}
			}
		}
	}
	v := scrub(u, generated)
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

// scrub drops timestamps (string fields named *Time or *Timestamp) and masks generated names.
func scrub(v any, generated map[string]string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if _, isString := e.(string); isString && (strings.HasSuffix(k, "Time") || strings.HasSuffix(k, "Timestamp")) {
				x[k] = "<time>" // its presence tells (a deletionTimestamp), not its value
				continue
			}
			x[k] = scrub(e, generated)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = scrub(e, generated)
		}
		return x
	case string:
		if m, ok := generated[x]; ok {
			return m
		}
		if uidPattern.MatchString(x) {
			return "<uid>" // a UID recorded in data or an annotation: drawn anew in each run
		}
		return x
	}
	return v
}

// diffEnd says how got's end state differs from want's.
func diffEnd(want, got map[string]string) []string {
	var out []string
	for _, k := range sortedKeys(want) {
		g, ok := got[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("end state: %s is missing (the run without faults ends with it)", k))
		case g != want[k]:
			out = append(out, fmt.Sprintf("end state: %s differs from the run without faults:\n  want %s\n  got  %s", k, want[k], g))
		}
	}
	for _, k := range sortedKeys(got) {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("end state: %s is extra (the run without faults ends without it): %s", k, got[k]))
		}
	}
	return out
}

// diffChanges says which objects the processes created or deleted more often than in the
// reference run, except those a fault wrote (touched), which may be created once more.
func diffChanges(want, got map[string]counts, touched map[string]bool) []string {
	var out []string
	for _, k := range sortedKeys(got) {
		g, w := got[k], want[k]
		if touched[k] {
			w.creates++
		}
		if g.creates > w.creates {
			out = append(out, fmt.Sprintf("writes: %s created %d times, %d without faults", k, g.creates, w.creates))
		}
		if g.deletes > w.deletes {
			out = append(out, fmt.Sprintf("writes: %s deleted %d times, %d without faults", k, g.deletes, w.deletes))
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// bookkeeping reports whether objects of gvr are the processes' bookkeeping rather than what
// their controllers make: Leases (leader election, shard membership: who holds them is the
// faults' doing, and the trace says who leads) and Events (named after the time). They stay
// out of the trace and the oracles.
func bookkeeping(gvr schema.GroupVersionResource) bool {
	switch {
	case gvr.Group == "coordination.k8s.io" && gvr.Resource == "leases":
		return true
	case gvr.Resource == "events" && (gvr.Group == "" || gvr.Group == "events.k8s.io"):
		return true
	}
	return false
}
