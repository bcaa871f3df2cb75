package client

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// Lister is the read side of an informer cache that NewCached reads. informer.Lister[T]
// (Informer.Lister()) satisfies it, as does any lister that returns apierrors NotFound from
// Get for a missing object.
type Lister[T Object] interface {
	Get(namespace, name string) (T, error)
	List(selector labels.Selector) ([]T, error)
}

// namespaceLister is the per-namespace lister informer.Lister.Namespace returns.
type namespaceLister[T Object] interface {
	List(selector labels.Selector) ([]T, error)
}

// NewCached returns a Client whose Get and List read lister (no API request) and whose writes
// (Create, Update, UpdateStatus, Patch, Apply, Delete) go to c. Hand CreateOrUpdate a cached
// client and its Get costs nothing; the write it makes still carries the cached
// resourceVersion, so a stale cache yields a Conflict, never a lost update. A cache that has
// not yet seen an object answers NotFound: CreateOrUpdate then tries a create, which fails
// with AlreadyExists; requeue and the next read finds it.
//
// Get and List return deep copies of the cached objects: what a Client returns is the
// caller's to change, so code written against an uncached Client (mutate, then Update) is
// safe here too, and the shared cache is never written to. Read through the lister itself
// where copies cost too much. Get returns the lister's NotFound for a missing object.
//
// List honours LabelSelector and FieldSelector on metadata.name and metadata.namespace, and
// returns the items sorted by namespace and name, as an API server does. A cache holds every
// object, so Limit is ignored (an API server serving from its watch cache does the same) and
// no continue token is returned; a Continue, or a field selector on other fields, is an error
// wrapping ErrInvalidInput. When lister has a Namespace(string) method returning a lister of
// one namespace (informer.Lister has), a List of one namespace goes through it, that is
// through the cache's namespace index.
func NewCached[T Object](c Client[T], lister Lister[T]) (Client[T], error) {
	if object.IsNil(c) || object.IsNil(lister) {
		return nil, fmt.Errorf("client: cached client for %s: nil client or lister: %w", reflect.TypeFor[T](), ErrInvalidInput)
	}
	cc := &cached[T]{Client: c, lister: lister}
	m := reflect.ValueOf(lister).MethodByName("Namespace")
	if m.IsValid() {
		mt := m.Type()
		if mt.NumIn() == 1 && mt.In(0).Kind() == reflect.String && mt.NumOut() == 1 &&
			mt.Out(0).Implements(reflect.TypeFor[namespaceLister[T]]()) {
			cc.namespace = m
		}
	}
	return cc, nil
}

type cached[T Object] struct {
	Client[T] // writes, Resource, GroupVersionKind, Namespaced
	lister    Lister[T]
	namespace reflect.Value // lister.Namespace, when it has one
}

func (c *cached[T]) Get(_ context.Context, namespace, name string, _ metav1.GetOptions) (T, error) {
	var zero T
	if err := checkNamespace("get", c.Resource(), c.Namespaced(), namespace, name, false); err != nil {
		return zero, err
	}
	obj, err := c.lister.Get(namespace, name)
	if err != nil {
		return zero, err
	}
	return deepCopy(obj)
}

func (c *cached[T]) List(_ context.Context, namespace string, opts metav1.ListOptions) (*List[T], error) {
	if err := checkNamespace("list", c.Resource(), c.Namespaced(), namespace, "", true); err != nil {
		return nil, err
	}
	fail := func(format string, args ...any) (*List[T], error) {
		return nil, fmt.Errorf("client: list %s from the cache: %s: %w", resourceName(c.Resource()), fmt.Sprintf(format, args...), ErrInvalidInput)
	}
	if opts.Continue != "" {
		return fail("a cache returns no continue tokens, so it takes none")
	}
	sel := labels.Everything()
	if opts.LabelSelector != "" {
		s, err := labels.Parse(opts.LabelSelector)
		if err != nil {
			return fail("label selector %q: %v", opts.LabelSelector, err)
		}
		sel = s
	}
	var fsel fields.Selector
	if opts.FieldSelector != "" {
		s, err := fields.ParseSelector(opts.FieldSelector)
		if err != nil {
			return fail("field selector %q: %v", opts.FieldSelector, err)
		}
		for _, r := range s.Requirements() {
			if r.Field != "metadata.name" && r.Field != "metadata.namespace" {
				return fail("field selector on %s: only metadata.name and metadata.namespace are served", r.Field)
			}
		}
		fsel = s
	}

	var objs []T
	var err error
	if namespace != "" && c.namespace.IsValid() {
		nl, ok := c.namespace.Call([]reflect.Value{reflect.ValueOf(namespace)})[0].Interface().(namespaceLister[T])
		if !ok {
			return fail("the lister's Namespace(%q) returned no lister", namespace)
		}
		objs, err = nl.List(sel)
	} else {
		objs, err = c.lister.List(sel)
	}
	if err != nil {
		return nil, err
	}
	out := &List[T]{Items: make([]T, 0, len(objs))}
	for _, o := range objs {
		if namespace != "" && o.GetNamespace() != namespace {
			continue
		}
		if fsel != nil && !fsel.Matches(fields.Set{"metadata.name": o.GetName(), "metadata.namespace": o.GetNamespace()}) {
			continue
		}
		cp, err := deepCopy(o)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, cp)
	}
	slices.SortFunc(out.Items, func(a, b T) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	return out, nil
}

// fieldOwner passes on the field owner of the client it writes through (WithFieldOwner), for
// ApplyConfig.
func (c *cached[T]) fieldOwner() string {
	if o, ok := c.Client.(interface{ fieldOwner() string }); ok {
		return o.fieldOwner()
	}
	return ""
}
