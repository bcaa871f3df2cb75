package fakecluster

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
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
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
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
	return s.listAt(gvr, ns, opts, nil)
}

// listAt is list over snap instead of the current state when snap is not nil.
func (s *store) listAt(gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions, snap *Snapshot) (runtime.Object, error) {
	ki, err := s.c.info(gvr)
	if err != nil {
		return nil, err
	}
	sel, err := newSelector(opts)
	if err != nil {
		return nil, err
	}
	var rv int64
	var items []runtime.Object
	if snap != nil {
		rv, items = snap.rv, matching(snap.objects[gvr], ns, sel)
	} else {
		s.mu.Lock()
		rv, items = s.rv, s.matchingLocked(gvr, ns, sel)
		s.mu.Unlock()
	}
	items, page, err := paginate(items, rv, opts, sel)
	if err != nil {
		return nil, err
	}
	rv = page.rv

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
		lm.SetContinue(page.next)
		lm.SetRemainingItemCount(page.remaining)
		if sel.shardSelector != "" {
			setShardInfo(list, sel.shardSelector)
		}
		return list, nil
	}
	list := &unstructured.UnstructuredList{Object: map[string]any{}}
	list.SetGroupVersionKind(listGVK)
	list.SetResourceVersion(strconv.FormatInt(rv, 10))
	list.SetContinue(page.next)
	list.SetRemainingItemCount(page.remaining)
	if sel.shardSelector != "" {
		_ = unstructured.SetNestedField(list.Object, sel.shardSelector, "metadata", "shardInfo", "selector")
	}
	list.Items = make([]unstructured.Unstructured, 0, len(items))
	for _, obj := range items {
		list.Items = append(list.Items, *obj.(*unstructured.Unstructured).DeepCopy())
	}
	return list, nil
}

// setShardInfo echoes a shard selector in a typed list's metadata.shardInfo, as the API
// server does for a list it filtered by one.
func setShardInfo(list runtime.Object, sel string) {
	v := reflect.ValueOf(list)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return
	}
	f := v.Elem().FieldByName("ListMeta")
	if !f.IsValid() {
		return
	}
	if lm, ok := f.Addr().Interface().(*metav1.ListMeta); ok {
		lm.ShardInfo = &metav1.ShardInfo{Selector: sel}
	}
}

// matchingLocked returns the stored objects of gvr in ns that sel matches, sorted by namespace
// and name, as a List and the start of a watch show them.
func (s *store) matchingLocked(gvr schema.GroupVersionResource, ns string, sel selector) []runtime.Object {
	return matching(s.objects[gvr], ns, sel)
}

// matching returns the objects of objs in ns that sel matches, sorted by namespace and name.
func matching(objs map[types.NamespacedName]runtime.Object, ns string, sel selector) []runtime.Object {
	var items []runtime.Object
	for _, obj := range objs {
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
	// shards is the shard selector (ListOptions.ShardSelector, KEP-5866), nil when none: the
	// cluster serves it as a kube-apiserver with the ShardedListAndWatch gate does.
	shards sharding.Selector
	// shardSelector is the selector as sent, echoed in a typed list's metadata.shardInfo.
	shardSelector string
}

// shardTerm is one range of a shard selector: shardRange(<field>, '<start>', '<end>').
var shardTerm = regexp.MustCompile(`^shardRange\((object\.metadata\.[a-z]+), '(0x[0-9a-f]{16,17})', '(0x[0-9a-f]{16,17})'\)$`)

// parseShardSelector parses the terms of a shard selector joined by " || ", over one field, the
// UID or the namespace (the two fields the API server hashes).
func parseShardSelector(sel string) (sharding.Selector, error) {
	var reqs []sharding.ShardRangeRequirement
	for term := range strings.SplitSeq(sel, " || ") {
		m := shardTerm.FindStringSubmatch(strings.TrimSpace(term))
		if m == nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("shard selector %q: cannot parse %q", sel, term))
		}
		if m[1] != "object.metadata.uid" && m[1] != "object.metadata.namespace" {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("shard selector %q: unsupported field path %q (supported: object.metadata.uid, object.metadata.namespace)", sel, m[1]))
		}
		if len(reqs) > 0 && reqs[0].Key != m[1] {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("shard selector %q: every range must hash the same field", sel))
		}
		reqs = append(reqs, sharding.ShardRangeRequirement{Key: m[1], Start: m[2], End: m[3]})
	}
	return sharding.NewSelector(reqs...), nil
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
	out := selector{labels: ls, fields: fs}
	if opts.ShardSelector != "" {
		if out.shards, err = parseShardSelector(opts.ShardSelector); err != nil {
			return selector{}, err
		}
		out.shardSelector = opts.ShardSelector
	}
	return out, nil
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
	if s.shards != nil {
		if ok, err := s.shards.Matches(obj); !ok || err != nil {
			return false
		}
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

// listPage is where a paginated list stands: the resourceVersion every page carries (the
// first page's), the token of the next page ("" on the last) and, without selectors, how many
// items remain after this page.
type listPage struct {
	rv        int64
	next      string
	remaining *int64
}

// continueToken is the content of a continue token: the first page's resourceVersion and the
// namespace/name key of the last item served.
type continueToken struct {
	RV    int64  `json:"rv"`
	After string `json:"after"`
}

// paginate serves opts.Limit items of items (sorted by namespace and name) after the continue
// token's key, as kube-apiserver pages a list. The pages are cut from the objects as they are
// now, not from a snapshot at the first page's resourceVersion as etcd serves them: an object
// written between two pages shows its new state (the API server would show the old one).
func paginate(items []runtime.Object, rv int64, opts metav1.ListOptions, sel selector) ([]runtime.Object, listPage, error) {
	page := listPage{rv: rv}
	if opts.Continue != "" {
		raw, err := base64.RawURLEncoding.DecodeString(opts.Continue)
		var tok continueToken
		if err == nil {
			err = json.Unmarshal(raw, &tok)
		}
		if err != nil {
			return nil, page, apierrors.NewBadRequest(fmt.Sprintf("continue key is not valid: %v", err))
		}
		page.rv = tok.RV
		start := sort.Search(len(items), func(i int) bool { return objectKey(items[i]) > tok.After })
		items = items[start:]
	}
	if opts.Limit <= 0 || int64(len(items)) <= opts.Limit {
		return items, page, nil
	}
	rest := int64(len(items)) - opts.Limit
	items = items[:opts.Limit]
	raw, err := json.Marshal(continueToken{RV: page.rv, After: objectKey(items[len(items)-1])})
	if err != nil {
		return nil, page, err
	}
	page.next = base64.RawURLEncoding.EncodeToString(raw)
	if sel.labels.Empty() && sel.fields.Empty() && sel.shards == nil {
		page.remaining = &rest
	}
	return items, page, nil
}

// objectKey orders objects as sortObjects does: by namespace, then name.
func objectKey(obj runtime.Object) string {
	m, _ := meta.Accessor(obj)
	return m.GetNamespace() + "\x00" + m.GetName()
}
