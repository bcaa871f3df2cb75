package sim

import (
	"encoding/json"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Drift has another actor, once the workload is done and the world quiet, delete one of the
// objects the controller created (drawn from the seed), as kubectl or another manager would:
// the controller must put it back.
func Drift() Fault { return driftFault{} }

// Edit has another actor, once the workload is done and the world quiet, set one of the fields
// the controller wrote into an object it created (a label, an annotation, a field of its spec or
// data, found in its managedFields; drawn from the seed) to another value: the controller must
// put it back. For controllers that own the content of what they create; a ReplicaSet
// controller, which never updates its Pods and releases a Pod relabelled out of its selector,
// rightly ends elsewhere.
func Edit() Fault { return driftFault{edit: true} }

type driftFault struct{ edit bool }

func (f driftFault) String() string {
	if f.edit {
		return "edit"
	}
	return "drift"
}

func (f driftFault) plan(rng *rand.Rand, _ *Result) plan {
	return &driftPlan{pick: rng.Float64(), edit: f.edit, field: rng.Float64()}
}

type driftPlan struct {
	base
	pick  float64 // which object
	edit  bool    // edit it rather than delete it
	field float64 // which of its fields
}

func (p *driftPlan) String() string {
	return "another actor changes or deletes an object the controller created"
}

func (p *driftPlan) end(w *world) bool {
	objs := w.processCreated()
	if len(objs) == 0 {
		return false
	}
	o := objs[int(p.pick*float64(len(objs)))]
	res := w.user.Dynamic.Resource(o.gvr).Namespace(o.namespace)
	if p.edit {
		obj, err := res.Get(w.ctx, o.name, metav1.GetOptions{})
		if err != nil {
			w.problem("drift: reading %s: %v", o.name, err)
			return false
		}
		if paths := writtenFields(obj.GetManagedFields()); len(paths) > 0 {
			path := paths[int(p.field*float64(len(paths)))]
			if old, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, path...); ok {
				if drifted, ok := driftValue(old); ok {
					if err := unstructured.SetNestedField(obj.Object, drifted, path...); err == nil {
						w.record("fault: another actor sets %s of %s %s to %v", strings.Join(path, "."), resourceString(o.gvr), nsName(o.namespace, o.name), drifted)
						if _, err := res.Update(w.ctx, obj, metav1.UpdateOptions{FieldManager: "sim-drift"}); err != nil {
							w.problem("drift: updating %s: %v", o.name, err)
							return false
						}
						p.touch(w, o)
						return true
					}
				}
			}
		}
		// Nothing of it to change: delete it instead.
	}
	w.record("fault: another actor deletes %s %s", resourceString(o.gvr), nsName(o.namespace, o.name))
	if err := res.Delete(w.ctx, o.name, metav1.DeleteOptions{}); err != nil && !isNotFound(err) {
		w.problem("drift: deleting %s: %v", o.name, err)
		return false
	}
	p.touch(w, o)
	return true
}

func (p *driftPlan) touch(w *world, o createdObject) {
	p.hit.Store(true)
	w.mu.Lock()
	w.res.touched[o.key] = true
	w.mu.Unlock()
}

// writtenFields returns the paths of the scalar fields the managedFields entries record, but
// for status and the metadata only the system writes (owner references, finalizers), sorted.
func writtenFields(entries []metav1.ManagedFieldsEntry) [][]string {
	seen := map[string][]string{}
	var walk func(m map[string]any, path []string)
	walk = func(m map[string]any, path []string) {
		leaf := true
		for k, v := range m {
			name, ok := strings.CutPrefix(k, "f:")
			if !ok {
				if k != "." {
					leaf = false // a list item (k:, v:, i:): lists are left alone
				}
				continue
			}
			leaf = false
			child, _ := v.(map[string]any)
			walk(child, append(slices.Clone(path), name))
		}
		if leaf && len(path) > 0 {
			seen[strings.Join(path, ".")] = path
		}
	}
	for _, e := range entries {
		if e.FieldsV1 == nil || e.Subresource != "" {
			continue
		}
		var m map[string]any
		if json.Unmarshal(e.FieldsV1.Raw, &m) == nil {
			walk(m, nil)
		}
	}
	var out [][]string
	for _, k := range slices.Sorted(maps.Keys(seen)) {
		path := seen[k]
		switch {
		case path[0] == "status",
			path[0] == "metadata" && len(path) > 1 && path[1] != "labels" && path[1] != "annotations":
			continue
		}
		out = append(out, path)
	}
	return out
}

// driftValue is another value of v's type; false for a value that is not a scalar.
func driftValue(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		return x + "-drifted", true
	case int64:
		return x + 1, true
	case float64:
		return x + 1, true
	case bool:
		return !x, true
	}
	return nil, false
}
