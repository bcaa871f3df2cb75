package fakecluster

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Field management (metadata.managedFields) is kube-apiserver's, from
// k8s.io/apimachinery/pkg/util/managedfields: every create, update and non-apply patch through
// the front ends records its fields for the request's field manager (operation Update), and
// server-side apply (apply.go) merges and records with operation Apply. Built-in kinds use
// client-go's OpenAPI models (applyconfigurations.NewTypeConverter), so their lists merge by key
// as on a server; custom resources use a deduced type converter, as kube-apiserver does for a CRD
// with x-kubernetes-preserve-unknown-fields: maps merge per key, lists are atomic.

// DefaultFieldManager is the manager recorded for a create, update or patch that names no
// FieldManager, unless Options.DefaultFieldManager says otherwise. kube-apiserver takes the part of the request's User-Agent before the first "/";
// client-go's default User-Agent starts with the program's base name, so a test binary's requests
// to a real server are recorded as its name ("mypkg.test"), and so are they here.
var DefaultFieldManager = defaultFieldManager()

func defaultFieldManager() string {
	name := filepath.Base(os.Args[0])
	name = strings.TrimSuffix(name, ".exe")
	name = strings.Split(name, "/")[0]
	name = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return -1
		}
		return r
	}, name)
	if len(name) > 128 {
		name = name[:128]
	}
	if name == "" {
		return "fakecluster"
	}
	return name
}

// managerName is the field manager a write is recorded for.
func (c *Cluster) managerName(fieldManager string) string {
	if fieldManager != "" {
		return fieldManager
	}
	return c.manager
}

// builtinTypeConverter knows client-go's built-in kinds, built once per binary.
var builtinTypeConverter = sync.OnceValue(func() managedfields.TypeConverter {
	return applyconfigurations.NewTypeConverter(scheme.Scheme)
})

// deducedTypeConverter serves custom resources (and any built-in kind the models lack).
var deducedTypeConverter = sync.OnceValue(managedfields.NewDeducedTypeConverter)

// fieldManagerKey names a field manager: the resource as the cluster knows it and the
// subresource ("" or "status") it serves.
type fieldManagerKey struct {
	ki  kindInfo
	sub string
}

// fieldManagers are shared by every cluster of the binary: they depend on nothing but the key.
var fieldManagers sync.Map // fieldManagerKey → *managedfields.FieldManager

// fieldManager returns kube-apiserver's field manager for ki and subresource. The fields a
// subresource cannot change are never owned through it: a main-resource write of a kind with a
// status subresource owns nothing under status, a status write owns nothing but status (the
// cluster keeps nothing else from it either).
func fieldManager(ki kindInfo, sub string) (*managedfields.FieldManager, error) {
	key := fieldManagerKey{ki: ki, sub: sub}
	if fm, ok := fieldManagers.Load(key); ok {
		return fm.(*managedfields.FieldManager), nil
	}
	var reset map[fieldpath.APIVersion]fieldpath.Filter
	version := fieldpath.APIVersion(ki.gvk.GroupVersion().String())
	switch {
	case sub == "status":
		reset = map[fieldpath.APIVersion]fieldpath.Filter{
			version: fieldpath.NewIncludeMatcherFilter(fieldpath.MakePrefixMatcherOrDie("status")),
		}
	case ki.status:
		reset = map[fieldpath.APIVersion]fieldpath.Filter{
			version: fieldpath.NewExcludeSetFilter(fieldpath.NewSet(fieldpath.MakePathOrDie("status"))),
		}
	}
	conv := objectConverter{}
	var (
		fm  *managedfields.FieldManager
		err error
	)
	if tc := typeConverterFor(ki); tc != deducedTypeConverter() {
		fm, err = managedfields.NewDefaultFieldManager(tc, conv, noDefaults{}, objectCreater{ki: ki}, ki.gvk, ki.gvk.GroupVersion(), sub, reset)
	} else {
		fm, err = managedfields.NewDefaultCRDFieldManager(tc, conv, noDefaults{}, objectCreater{ki: ki}, ki.gvk, ki.gvk.GroupVersion(), sub, reset)
	}
	if err != nil {
		return nil, fmt.Errorf("fakecluster: field manager for %s: %w", ki.gvk, err)
	}
	actual, _ := fieldManagers.LoadOrStore(key, fm)
	return actual.(*managedfields.FieldManager), nil
}

// typeConverterFor is the schema field management reads ki's objects with: client-go's models
// for a built-in kind they describe, a deduced one otherwise.
func typeConverterFor(ki kindInfo) managedfields.TypeConverter {
	if ki.typed {
		tc := builtinTypeConverter()
		if empty, err := (objectCreater{ki: ki}).New(ki.gvk); err == nil {
			if _, err := tc.ObjectToTyped(empty); err == nil {
				return tc
			}
		}
	}
	return deducedTypeConverter()
}

// recordUpdate sets the managedFields of obj (a create's or update's result before the cluster's
// rules, in the stored form) as kube-apiserver does for a non-apply write by manager: live is
// the stored object, or nil for a create. As on the server, a failure leaves the managedFields
// of live in place rather than failing the write.
func (c *Cluster) recordUpdate(ki kindInfo, sub string, live, obj runtime.Object, manager string) runtime.Object {
	fm, err := fieldManager(ki, sub)
	if err != nil {
		return obj
	}
	if live == nil {
		if live, err = (objectCreater{ki: ki}).New(ki.gvk); err != nil {
			return obj
		}
	}
	out := fm.UpdateNoErrors(live, obj, manager)
	c.stampManagedFields(live, out)
	return out
}

// stampManagedFields sets the time of every managedFields entry of obj that live lacks or
// that changed to the cluster's clock, in whole seconds as the API server serializes it (the
// field manager stamps the real clock).
func (c *Cluster) stampManagedFields(live, obj runtime.Object) {
	om, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	entries := om.GetManagedFields()
	if len(entries) == 0 {
		return
	}
	var old []metav1.ManagedFieldsEntry
	if live != nil {
		if lm, err := meta.Accessor(live); err == nil {
			old = lm.GetManagedFields()
		}
	}
	now := metav1.NewTime(c.clock.Now().UTC().Truncate(time.Second))
	changed := false
	for i := range entries {
		e := &entries[i]
		kept := false
		for _, o := range old {
			if o.Manager == e.Manager && o.Operation == e.Operation && o.Subresource == e.Subresource &&
				o.APIVersion == e.APIVersion && o.Time.Equal(e.Time) {
				kept = true
				break
			}
		}
		if !kept {
			e.Time = &now
			changed = true
		}
	}
	if changed {
		// In the field manager's order, by the new times: operation, time, manager, version,
		// subresource.
		slices.SortStableFunc(entries, func(p, q metav1.ManagedFieldsEntry) int {
			return cmp.Or(
				cmp.Compare(p.Operation, q.Operation),
				cmp.Compare(unixOf(p.Time), unixOf(q.Time)),
				cmp.Compare(p.Manager, q.Manager),
				cmp.Compare(p.APIVersion, q.APIVersion),
				cmp.Compare(p.Subresource, q.Subresource))
		})
		om.SetManagedFields(entries)
	}
}

func unixOf(t *metav1.Time) int64 {
	if t == nil {
		return 0
	}
	return t.Unix()
}

// objectConverter is the field manager's view of versions: the cluster stores each version of
// a resource apart and converts nothing, so converting is setting apiVersion and kind, on a
// shallow copy (stored objects are shared and never modified).
type objectConverter struct{}

func (objectConverter) Convert(in, out, _ any) error {
	return fmt.Errorf("fakecluster: conversion of %T to %T is not supported", in, out)
}

func (objectConverter) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

func (objectConverter) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	gvk := in.GetObjectKind().GroupVersionKind()
	if gvk.Empty() {
		var err error
		if gvk, err = kindOf(in); err != nil {
			return nil, err
		}
	}
	target, ok := gv.KindForGroupVersionKinds([]schema.GroupVersionKind{gvk})
	if !ok || target != gvk {
		return nil, fmt.Errorf("fakecluster: %s cannot be converted to %v: the cluster converts no versions", gvk, gv)
	}
	if u, ok := in.(*unstructured.Unstructured); ok {
		out := &unstructured.Unstructured{Object: maps.Clone(u.Object)}
		out.SetGroupVersionKind(gvk)
		return out, nil
	}
	v := reflect.ValueOf(in)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("fakecluster: cannot convert %T", in)
	}
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	out := cp.Interface().(runtime.Object)
	out.GetObjectKind().SetGroupVersionKind(gvk)
	return out, nil
}

// objectCreater makes the empty object of ki's kind an apply starts from.
type objectCreater struct{ ki kindInfo }

func (o objectCreater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	if o.ki.typed {
		obj, err := scheme.Scheme.New(gvk)
		if err != nil {
			return nil, err
		}
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		return obj, nil
	}
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// noDefaults is the cluster's defaulting: none.
type noDefaults struct{}

func (noDefaults) Default(runtime.Object) {}
