package fakecluster

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// List returns the objects of gvr in ns (all namespaces for ""), sorted by namespace and name,
// in a list whose resourceVersion a watch can resume from. gvk is ignored: the cluster knows
// the kind of every resource it serves.
func (s *store) List(gvr schema.GroupVersionResource, _ schema.GroupVersionKind, ns string, opts ...metav1.ListOptions) (runtime.Object, error) {
	var o metav1.ListOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	return s.list(gvr, ns, o)
}

func (s *store) list(gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) (runtime.Object, error) {
	ki, err := s.c.info(gvr)
	if err != nil {
		return nil, err
	}
	sel, err := newSelector(opts)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	rv := s.rv
	items := s.matchingLocked(gvr, ns, sel)
	s.mu.Unlock()

	listGVK := ki.gvk.GroupVersion().WithKind(ki.gvk.Kind + "List")
	if ki.typed {
		list, err := scheme.Scheme.New(listGVK)
		if err != nil {
			return nil, err
		}
		copies := make([]runtime.Object, len(items))
		for i, obj := range items {
			copies[i] = obj.DeepCopyObject()
		}
		if err := meta.SetList(list, copies); err != nil {
			return nil, err
		}
		lm, _ := meta.ListAccessor(list)
		lm.SetResourceVersion(strconv.FormatInt(rv, 10))
		return list, nil
	}
	list := &unstructured.UnstructuredList{Object: map[string]any{}}
	list.SetGroupVersionKind(listGVK)
	list.SetResourceVersion(strconv.FormatInt(rv, 10))
	list.Items = make([]unstructured.Unstructured, 0, len(items))
	for _, obj := range items {
		list.Items = append(list.Items, *obj.(*unstructured.Unstructured).DeepCopy())
	}
	return list, nil
}

// matchingLocked returns the stored objects of gvr in ns that sel matches, sorted by namespace
// and name, as a List and the start of a watch show them.
func (s *store) matchingLocked(gvr schema.GroupVersionResource, ns string, sel selector) []runtime.Object {
	var items []runtime.Object
	for _, obj := range s.objects[gvr] {
		if sel.matches(obj, ns) {
			items = append(items, obj)
		}
	}
	sortObjects(items)
	return items
}

// sortObjects sorts objects by namespace and name.
func sortObjects(objs []runtime.Object) {
	sort.Slice(objs, func(i, j int) bool {
		a, _ := meta.Accessor(objs[i])
		b, _ := meta.Accessor(objs[j])
		if a.GetNamespace() != b.GetNamespace() {
			return a.GetNamespace() < b.GetNamespace()
		}
		return a.GetName() < b.GetName()
	})
}

// selector is a list or watch filter: labels and fields. A field selector may name any field
// path of the object ("spec.nodeName", "status.phase"); an API server supports only a few per
// kind, so a selector that works here may be refused there.
type selector struct {
	labels labels.Selector
	fields fields.Selector
}

func newSelector(opts metav1.ListOptions) (selector, error) {
	ls, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return selector{}, apierrors.NewBadRequest(fmt.Sprintf("label selector %q: %v", opts.LabelSelector, err))
	}
	fs, err := fields.ParseSelector(opts.FieldSelector)
	if err != nil {
		return selector{}, apierrors.NewBadRequest(fmt.Sprintf("field selector %q: %v", opts.FieldSelector, err))
	}
	return selector{labels: ls, fields: fs}, nil
}

func (s selector) matches(obj runtime.Object, ns string) bool {
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	if ns != "" && m.GetNamespace() != ns {
		return false
	}
	if !s.labels.Matches(labels.Set(m.GetLabels())) {
		return false
	}
	if s.fields.Empty() {
		return true
	}
	set := fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()}
	var fieldsOf map[string]any // the object's fields, converted once when a selector needs them
	for _, r := range s.fields.Requirements() {
		if _, ok := set[r.Field]; ok {
			continue
		}
		if fieldsOf == nil {
			var err error
			if fieldsOf, err = asMap(obj); err != nil {
				return false
			}
		}
		v, found, err := unstructured.NestedFieldNoCopy(fieldsOf, strings.Split(r.Field, ".")...)
		switch {
		case !found || err != nil || v == nil:
			set[r.Field] = ""
		default:
			set[r.Field] = fmt.Sprint(v)
		}
	}
	return s.fields.Matches(set)
}
