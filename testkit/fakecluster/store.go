package fakecluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
)

// store holds every object of the cluster, built-in kinds as their Go types and custom resources
// as *unstructured.Unstructured, under one resourceVersion counter (etcd's revision), with a
// bounded history of writes from which watches resume. Stored objects are never modified in
// place: a write stores a new copy, so readers and the history may share them.
type store struct {
	c *Cluster

	mu        sync.Mutex
	rv        int64
	objects   map[schema.GroupVersionResource]map[types.NamespacedName]runtime.Object
	history   int
	log       []event // oldest first, at most history long
	compacted int64   // the newest resourceVersion no longer in log
	watchers  map[*watcher]struct{}
}

// event is one write, as watchers receive it.
type event struct {
	gvr  schema.GroupVersionResource
	typ  watch.EventType
	obj  runtime.Object // shared, never modified
	prev runtime.Object // the object before a modification, for selectors; shared
	rv   int64
}

var _ clienttesting.ObjectTracker = (*store)(nil)

func newStore(c *Cluster, history int) *store {
	return &store{
		c:        c,
		objects:  map[schema.GroupVersionResource]map[types.NamespacedName]runtime.Object{},
		history:  history,
		watchers: map[*watcher]struct{}{},
	}
}

// normalize returns a copy of obj in the form the store keeps for ki: the Go type with an empty
// TypeMeta (as typed clients return objects) for built-in kinds, unstructured with apiVersion
// and kind for custom resources.
func normalize(obj runtime.Object, ki kindInfo) (runtime.Object, error) {
	if ki.typed {
		out := obj
		if u, ok := obj.(*unstructured.Unstructured); ok {
			typed, err := scheme.Scheme.New(ki.gvk)
			if err != nil {
				return nil, err
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("%s: %v", ki.gvk.Kind, err))
			}
			out = typed
		} else {
			out = obj.DeepCopyObject()
		}
		out.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		return out, nil
	}
	var u *unstructured.Unstructured
	if in, ok := obj.(*unstructured.Unstructured); ok {
		// DeepCopy panics on a value JSON cannot hold (a Go int, a struct): an error instead,
		// naming the field, as an API server would refuse to decode such a body.
		if err := checkJSON(in.Object, ""); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("%s %s: %v", ki.gvk.Kind, in.GetName(), err))
		}
		u = in.DeepCopy()
	} else {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		u = &unstructured.Unstructured{Object: m}
	}
	u.SetGroupVersionKind(ki.gvk)
	return u, nil
}

// checkJSON reports the first value under v that is not one of the types decoded JSON has
// (string, int64, float64, bool, nil, json.Number, map[string]any, []any).
func checkJSON(v any, path string) error {
	switch x := v.(type) {
	case string, int64, float64, bool, nil, json.Number:
		return nil
	case map[string]any:
		for k, e := range x {
			if err := checkJSON(e, path+"."+k); err != nil {
				return err
			}
		}
		return nil
	case []any:
		for i, e := range x {
			if err := checkJSON(e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	default:
		return fmt.Errorf("field %s: %T is not a JSON value (use int64, float64, string, bool, map[string]any or []any)", strings.TrimPrefix(path, "."), v)
	}
}

// toUnstructured returns obj (typed or unstructured, not modified) as an unstructured object
// with apiVersion and kind, for the dynamic front end.
func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.DeepCopy(), nil
	}
	gvk, err := kindOf(obj)
	if err != nil {
		return nil, err
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// nextRVLocked returns a new resourceVersion, increasing across all resources.
func (s *store) nextRVLocked() int64 {
	s.rv++
	return s.rv
}

// stampNew sets what a create assigns and a seed keeps when given: UID, creationTimestamp and,
// for a kind that tracks it, generation.
func (s *store) stampNew(m metav1.Object, ki kindInfo) {
	if m.GetUID() == "" {
		m.SetUID(s.c.newUID())
	}
	if ts := m.GetCreationTimestamp(); ts.IsZero() {
		// Stored in whole seconds, as the API server's serialization does.
		m.SetCreationTimestamp(metav1.NewTime(s.c.clock.Now().Truncate(time.Second)))
	}
	if m.GetGeneration() == 0 && ki.generation {
		m.SetGeneration(1)
	}
}

func (s *store) getLocked(gvr schema.GroupVersionResource, ns, name string) (runtime.Object, bool) {
	obj, ok := s.objects[gvr][types.NamespacedName{Namespace: ns, Name: name}]
	return obj, ok
}

// putLocked stores obj (which the store now owns) under a new resourceVersion and tells the
// watchers. create says whether the object must be new (else it must exist).
func (s *store) putLocked(gvr schema.GroupVersionResource, obj runtime.Object, create bool) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	key := types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()}
	prev, exists := s.objects[gvr][key]
	switch {
	case create && exists:
		return apierrors.NewAlreadyExists(gvr.GroupResource(), m.GetName())
	case !create && !exists:
		return apierrors.NewNotFound(gvr.GroupResource(), m.GetName())
	}
	rv := s.nextRVLocked()
	m.SetResourceVersion(strconv.FormatInt(rv, 10))
	if s.objects[gvr] == nil {
		s.objects[gvr] = map[types.NamespacedName]runtime.Object{}
	}
	s.objects[gvr][key] = obj
	ev := event{gvr: gvr, typ: watch.Modified, obj: obj, prev: prev, rv: rv}
	if create {
		ev.typ, ev.prev = watch.Added, nil
	}
	s.recordLocked(ev)
	return nil
}

// deleteLocked removes an object; the Deleted event carries it with the deletion's
// resourceVersion, as an API server's does.
func (s *store) deleteLocked(gvr schema.GroupVersionResource, ns, name string) (runtime.Object, error) {
	key := types.NamespacedName{Namespace: ns, Name: name}
	obj, ok := s.objects[gvr][key]
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	delete(s.objects[gvr], key)
	rv := s.nextRVLocked()
	gone := obj.DeepCopyObject()
	m, _ := meta.Accessor(gone)
	m.SetResourceVersion(strconv.FormatInt(rv, 10))
	s.recordLocked(event{gvr: gvr, typ: watch.Deleted, obj: gone, rv: rv})
	return gone, nil
}

func (s *store) recordLocked(ev event) {
	if len(s.log) >= s.history {
		n := len(s.log) - s.history + 1
		s.compacted = s.log[n-1].rv
		s.log = append(s.log[:0], s.log[n:]...)
	}
	s.log = append(s.log, ev)
	for w := range s.watchers {
		w.offer(ev)
	}
}

// Add seeds obj (or every item of a list) as if it had been created: UID, creationTimestamp and
// generation 1 unless set, and a new resourceVersion. The resource is found from the object's
// kind; an unstructured object of an unknown kind declares it (see Options.Objects).
func (s *store) Add(obj runtime.Object) error {
	if meta.IsListType(obj) {
		items, err := meta.ExtractList(obj)
		if err != nil {
			return err
		}
		for _, item := range items {
			if err := s.Add(item); err != nil {
				return err
			}
		}
		return nil
	}
	gvr, ki, err := s.c.infoForObject(obj)
	if err != nil {
		return err
	}
	stored, err := normalize(obj, ki)
	if err != nil {
		return err
	}
	m, err := meta.Accessor(stored)
	if err != nil {
		return err
	}
	if m.GetName() == "" {
		return errors.New("seed object needs a name")
	}
	s.stampNew(m, ki)
	convertOnWrite(stored)
	if u, ok := stored.(*unstructured.Unstructured); ok && ki.schema != nil {
		pruneAndDefault(u.Object, ki.schema) // as the API server's reads would, not validated
	}
	if u, ok := stored.(*unstructured.Unstructured); ok && gvr == CRDResource {
		if err := s.c.serveCRD(u); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.putLocked(gvr, stored, true)
}

// Get returns a copy of the stored object.
func (s *store) Get(gvr schema.GroupVersionResource, ns, name string, _ ...metav1.GetOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.getLocked(gvr, ns, name)
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	return obj.DeepCopyObject(), nil
}

// Create stores obj as it is, but for a new resourceVersion (no API-server rules).
func (s *store) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, _ ...metav1.CreateOptions) error {
	return s.write(gvr, obj, ns, true)
}

// Update replaces the stored object with obj as it is, but for a new resourceVersion.
func (s *store) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, _ ...metav1.UpdateOptions) error {
	return s.write(gvr, obj, ns, false)
}

// Patch stores an already patched object, as Update.
func (s *store) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, _ ...metav1.PatchOptions) error {
	return s.write(gvr, obj, ns, false)
}

// errApply is the tracker's answer to Apply: server-side apply needs the API server's rules.
var errApply = apierrors.NewBadRequest("fakecluster: the tracker does not apply; server-side apply is served by the front ends (Clientset, Dynamic)")

// Apply is not supported by the tracker, whose writes skip the API server's rules: it returns a
// BadRequest error. Apply through Clientset or Dynamic instead.
func (s *store) Apply(schema.GroupVersionResource, runtime.Object, string, ...metav1.PatchOptions) error {
	return errApply
}

func (s *store) write(gvr schema.GroupVersionResource, obj runtime.Object, ns string, create bool) error {
	ki, err := s.c.info(gvr)
	if err != nil {
		return err
	}
	stored, err := normalize(obj, ki)
	if err != nil {
		return err
	}
	m, err := meta.Accessor(stored)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if m.GetNamespace() == "" {
		m.SetNamespace(ns)
	}
	if m.GetNamespace() != ns {
		return apierrors.NewBadRequest(fmt.Sprintf("request namespace %q does not match object namespace %q", ns, m.GetNamespace()))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.putLocked(gvr, stored, create)
}

// Delete removes an object at once (there is no graceful deletion).
func (s *store) Delete(gvr schema.GroupVersionResource, ns, name string, _ ...metav1.DeleteOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.deleteLocked(gvr, ns, name)
	return err
}
