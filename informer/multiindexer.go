package informer

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// multiIndexer is the cache.Indexer of a multiNamespace.
type multiIndexer struct{ m *multiNamespace }

// route returns the indexer of namespace ns, or nil outside the scope. For
// a NamespaceSet scope, outside is an error (ErrNamespaceNotWatched), so
// that a read there is not taken for an absent object.
func (x *multiIndexer) route(ns string) (cache.Indexer, error) {
	v := x.m.view.Load()
	if v.spans {
		return nil, nil
	}
	if inf, ok := v.byNS[ns]; ok {
		return inf.GetIndexer(), nil
	}
	if x.m.dyn != nil {
		return nil, &NamespaceNotWatchedError{Informer: x.m.name, Namespace: ns}
	}
	return nil, nil
}

func (x *multiIndexer) indexers() []cache.Indexer {
	each := x.m.each()
	out := make([]cache.Indexer, 0, len(each))
	for _, inf := range each {
		out = append(out, inf.GetIndexer())
	}
	return out
}

// routeObject returns the indexer for obj's namespace, or an error naming it.
func (x *multiIndexer) routeObject(obj any) (cache.Indexer, error) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return nil, err
	}
	ns, _, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil, err
	}
	if x.m.view.Load().spans {
		// A shard's membership is the hash of a field a key does not carry:
		// an object already cached is written where it is.
		if idx := x.holding(key); idx != nil {
			return idx, nil
		}
		return nil, fmt.Errorf("informer %s: object %q is in none of its shards; the shard of a new object cannot be told from its key", x.m.name, key)
	}
	if idx, _ := x.route(ns); idx != nil {
		return idx, nil
	}
	return nil, fmt.Errorf("informer %s: object %q is outside the namespaces %s", x.m.name, key, strings.Join(x.m.view.Load().namespaces, ","))
}

func (x *multiIndexer) write(obj any, fn func(cache.Indexer) error) error {
	idx, err := x.routeObject(obj)
	if err != nil {
		return err
	}
	return fn(idx)
}

func (x *multiIndexer) Add(obj any) error {
	return x.write(obj, func(i cache.Indexer) error { return i.Add(obj) })
}

func (x *multiIndexer) Update(obj any) error {
	return x.write(obj, func(i cache.Indexer) error { return i.Update(obj) })
}

func (x *multiIndexer) Delete(obj any) error {
	return x.write(obj, func(i cache.Indexer) error { return i.Delete(obj) })
}

func (x *multiIndexer) List() []any {
	var out []any
	for _, i := range x.indexers() {
		out = append(out, i.List()...)
	}
	return out
}

func (x *multiIndexer) ListKeys() []string {
	var out []string
	for _, i := range x.indexers() {
		out = append(out, i.ListKeys()...)
	}
	return out
}

// LastStoreSyncResourceVersion is the namespaces' common resourceVersion,
// or "" when they differ.
func (x *multiIndexer) LastStoreSyncResourceVersion() string {
	return common(x.indexers(), func(i cache.Indexer) string { return i.LastStoreSyncResourceVersion() })
}

func (x *multiIndexer) Bookmark(rv string) {
	for _, i := range x.indexers() {
		i.Bookmark(rv)
	}
}

func (x *multiIndexer) Get(obj any) (any, bool, error) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return nil, false, err
	}
	return x.GetByKey(key)
}

// GetByKey looks in the key's namespace only; a key outside the scope is
// absent (an error for a NamespaceSet scope).
func (x *multiIndexer) GetByKey(key string) (any, bool, error) {
	if x.m.view.Load().spans {
		// A shard's membership is a hash of a field the key lacks: look in each.
		for _, i := range x.indexers() {
			if obj, ok, err := i.GetByKey(key); ok || err != nil {
				return obj, ok, err
			}
		}
		return nil, false, nil
	}
	ns, _, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil, false, err
	}
	idx, err := x.route(ns)
	if idx == nil {
		return nil, false, err
	}
	return idx.GetByKey(key)
}

// holding returns the indexer of the shard that caches key, or nil.
func (x *multiIndexer) holding(key string) cache.Indexer {
	for _, i := range x.indexers() {
		if _, ok, _ := i.GetByKey(key); ok {
			return i
		}
	}
	return nil
}

// Replace splits list by namespace and replaces each namespace's contents.
func (x *multiIndexer) Replace(list []any, rv string) error {
	v := x.m.view.Load()
	if v.spans {
		return fmt.Errorf("informer %s: Replace: not supported for an informer following a ShardSet (a shard's objects cannot be told from the list)", x.m.name)
	}
	parts := map[string][]any{}
	for _, obj := range list {
		m, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		if v.byNS[m.GetNamespace()] == nil {
			return fmt.Errorf("informer %s: object %s/%s is outside the namespaces %s", x.m.name, m.GetNamespace(), m.GetName(), strings.Join(v.namespaces, ","))
		}
		parts[m.GetNamespace()] = append(parts[m.GetNamespace()], obj)
	}
	var errs []error
	for _, ns := range v.namespaces {
		if err := v.byNS[ns].GetIndexer().Replace(parts[ns], rv); err != nil {
			errs = append(errs, fmt.Errorf("namespace %s: %w", ns, err))
		}
	}
	return errors.Join(errs...)
}

func (x *multiIndexer) Resync() error {
	var errs []error
	for _, i := range x.indexers() {
		errs = append(errs, i.Resync())
	}
	return errors.Join(errs...)
}

func (x *multiIndexer) Index(name string, obj any) ([]any, error) {
	return x.gather(func(i cache.Indexer) ([]any, error) { return i.Index(name, obj) })
}

func (x *multiIndexer) IndexKeys(name, value string) ([]string, error) {
	if name == cache.NamespaceIndex && !x.m.view.Load().spans {
		idx, err := x.route(value)
		if idx == nil {
			return nil, err
		}
		return idx.IndexKeys(name, value)
	}
	var out []string
	for _, i := range x.indexers() {
		keys, err := i.IndexKeys(name, value)
		if err != nil {
			return nil, err
		}
		out = append(out, keys...)
	}
	return out, nil
}

func (x *multiIndexer) ListIndexFuncValues(name string) []string {
	var out []string
	for _, i := range x.indexers() {
		out = append(out, i.ListIndexFuncValues(name)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ByIndex answers the namespace index from that namespace's indexer alone
// and every other index from all of them.
func (x *multiIndexer) ByIndex(name, value string) ([]any, error) {
	if name == cache.NamespaceIndex && !x.m.view.Load().spans {
		idx, err := x.route(value)
		if idx == nil {
			return nil, err
		}
		return idx.ByIndex(name, value)
	}
	return x.gather(func(i cache.Indexer) ([]any, error) { return i.ByIndex(name, value) })
}

func (x *multiIndexer) gather(fn func(cache.Indexer) ([]any, error)) ([]any, error) {
	var out []any
	for _, i := range x.indexers() {
		objs, err := fn(i)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// GetIndexers returns the indexers, the same on every namespace (for a
// NamespaceSet scope, also when it has none).
func (x *multiIndexer) GetIndexers() cache.Indexers {
	if x.m.dyn != nil {
		return x.m.dyn.getIndexers()
	}
	v := x.m.view.Load()
	return v.byNS[v.namespaces[0]].GetIndexer().GetIndexers()
}

func (x *multiIndexer) AddIndexers(indexers cache.Indexers) error {
	return x.m.AddIndexers(indexers)
}
