package informer

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Lister reads a typed informer's cache. Results are in no particular order
// and are the cache's own objects: never mutate them.
type Lister[T Object] interface {
	// Get returns the object namespace/name. Cluster-scoped objects have
	// namespace "". When absent it returns an apierrors NotFound error for
	// the informer's group and resource, as a GET to the API server would.
	Get(namespace, name string) (T, error)
	// List returns the objects whose labels match selector, in every
	// namespace the informer watches. A nil selector matches everything.
	// An object of the wrong type in the cache is left out: a failed
	// custom-resource conversion (reported once, when it entered the cache)
	// or a foreign object (reported to the factory's error handler here).
	// Get of its key returns an error matching ErrUnexpectedType.
	List(selector labels.Selector) ([]T, error)
	// Namespace narrows the lister to one namespace (through the namespace
	// index). Namespace(metav1.NamespaceAll) is the whole cache.
	Namespace(namespace string) NamespaceLister[T]
}

// NamespaceLister reads one namespace of a typed informer's cache.
type NamespaceLister[T Object] interface {
	// Get returns the named object in the lister's namespace, or an
	// apierrors NotFound error.
	Get(name string) (T, error)
	// List returns the objects of the namespace whose labels match
	// selector; a nil selector matches everything.
	List(selector labels.Selector) ([]T, error)
}

type lister[T Object] struct{ s *sharedInformer[T] }

func (l *lister[T]) Get(namespace, name string) (T, error) {
	var zero T
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	obj, exists, err := l.s.inf.GetIndexer().GetByKey(key)
	if err != nil {
		return zero, err
	}
	if !exists {
		return zero, apierrors.NewNotFound(l.s.gvr.GroupResource(), name)
	}
	typed, ok := obj.(T)
	if !ok {
		return zero, l.s.unexpected(obj)
	}
	return typed, nil
}

func (l *lister[T]) List(selector labels.Selector) ([]T, error) {
	return filter(l.s, l.s.inf.GetIndexer().List(), selector)
}

func (l *lister[T]) Namespace(namespace string) NamespaceLister[T] {
	return &namespaceLister[T]{s: l.s, namespace: namespace}
}

type namespaceLister[T Object] struct {
	s         *sharedInformer[T]
	namespace string
}

func (l *namespaceLister[T]) Get(name string) (T, error) {
	return (&lister[T]{s: l.s}).Get(l.namespace, name)
}

func (l *namespaceLister[T]) List(selector labels.Selector) ([]T, error) {
	if l.namespace == metav1.NamespaceAll {
		return filter(l.s, l.s.inf.GetIndexer().List(), selector)
	}
	objs, err := l.s.inf.GetIndexer().ByIndex(indexNamespace, l.namespace)
	if err != nil {
		return nil, err
	}
	return filter(l.s, objs, selector)
}

// filter keeps the objects matching selector, typed.
func filter[T Object](s *sharedInformer[T], objs []any, selector labels.Selector) ([]T, error) {
	everything := selector == nil || selector.Empty()
	out := make([]T, 0, len(objs))
	for _, obj := range objs {
		typed, ok := obj.(T)
		if !ok {
			// Left out. A failed custom-resource conversion was reported when
			// the object entered the cache; anything else is a foreign object
			// and reported here, as in Informer.ByIndex.
			if !unconverted(obj) {
				s.f.report(s.unexpected(obj))
			}
			continue
		}
		if everything || selector.Matches(labels.Set(typed.GetLabels())) {
			out = append(out, typed)
		}
	}
	return out, nil
}
