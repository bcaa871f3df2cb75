package informer

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/internal/builtin"
	"github.com/ctrlkit/ctrlkit/internal/directinformer"
	"github.com/ctrlkit/ctrlkit/internal/object"
)

// Object is what every type served by this package satisfies: a pointer to a
// Kubernetes API struct such as *corev1.Pod, with ObjectMeta accessors and
// DeepCopyObject (a superset of client-go's cache.Object constraint). It is
// the one object constraint of ctrlkit: customresource.Object and the other
// packages' Object are the same type.
type Object = object.Object

// For returns the factory's shared informer for the built-in API type T
// (for example *corev1.Pod or *appsv1.ReplicaSet): every call with the same
// T on the same factory returns the same Informer, backed by one client-go
// SharedIndexInformer and so one watch.
//
// T is mapped to its resource through client-go's scheme (T → group, version
// and kind) and the standard plural rules (kind → resource), and served by an
// informer over the clientset's typed client, as client-go's generated
// informers are, so every type client-go's clientset serves works without a
// per-type switch. A T the factory cannot serve (a
// custom resource, a subresource type such as *autoscalingv1.Scale, a list
// type) yields an error matching ErrUnsupportedType; use ForResource for
// custom resources.
//
// Informers obtained after Start are started at once.
//
// Scope options (InNamespaces, WithLabelSelector, WithFieldSelector) narrow
// what this informer lists and watches, and so what it caches: the usual
// cure for a controller running out of memory on a large cluster. The
// factory serves each T with one scope: a later For with the same T and an
// equal scope returns the same informer; with another scope (no options
// included) it returns a *ScopeConflictError naming both, since
// two controllers silently reading different caches of one type is a bug.
// A bad option (an invalid selector or namespace) is an error naming T and
// the option. Informers taken from SharedInformerFactory are never scoped.
//
// A scoped informer runs its own client-go informers (one per namespace),
// started, waited for (WaitForCacheSync) and shut down by the factory like
// every other; handlers, indexes, managedFields stripping, sharing, the
// ObjectOptions.Transform functions and the mutation detector apply as to any informer.
func For[T Object](f *Factory, opts ...ScopeOption[T]) (Informer[T], error) {
	t := reflect.TypeFor[T]()
	if f == nil {
		return nil, fmt.Errorf("informer for %s: nil factory: %w", object.TypeName(t), ErrNoClient)
	}
	if !f.hasClient {
		return nil, fmt.Errorf("informer for %s: the factory has no kubernetes clientset: %w", object.TypeName(t), ErrNoClient)
	}
	sc, err := buildScope(opts)
	if err != nil {
		return nil, err
	}
	if sc, err = f.factoryScope(object.TypeName(t), sc, typedResources(t)...); err != nil {
		return nil, err
	}
	inf, err := lookupOrCreate(f, registryKey{source: sourceTyped, typ: t}, sc, func() (*sharedInformer[T], error) {
		if !sc.narrowed() && f.hold == nil {
			gvk, gvr, shared, err := f.resolveTyped(t, f.typed, f.cfg.namespace, f.cfg.tweak)
			if err != nil {
				return nil, err
			}
			return newSharedInformer[T](f, gvr.GroupResource().String(), gvr, gvk, shared)
		}
		return newScopedTyped[T](f, t, sc)
	})
	if err != nil {
		return nil, err
	}
	return inf, nil
}

// newScopedTyped builds the informer of a scoped For. Called with f.mu held.
func newScopedTyped[T Object](f *Factory, t reflect.Type, sc scope) (*sharedInformer[T], error) {
	var (
		gvk schema.GroupVersionKind
		gvr schema.GroupVersionResource
	)
	// client-go reports only the first informer of a resource built under
	// the factory's name, and logs an error for every later one: only the
	// first namespace's informer factory gets the name.
	name := f.name // nil is no name
	if f.hold != nil {
		// An informer with a lifetime may be built again after it stopped,
		// and client-go logs an error for every informer of a resource
		// built under a name after the first: it reports nothing.
		name = nil
	}
	if sc.set != nil {
		// A NamespaceSet may be empty: resolve the type without an
		// informer. Its namespaces' informers get no informer name (see
		// InNamespaceSet).
		bt, err := builtinType(t)
		if err != nil {
			return nil, err
		}
		gvk, gvr = bt.GVK, bt.GVR
		name = nil
	}
	combined, err := f.newScoped(object.TypeName(t), sc, func(p string) (startable, cache.SharedIndexInformer, error) {
		ns, tweak := sc.partition(p, f.cfg.namespace, f.cfg.tweak)
		factory := newTypedInformers(f.client, f.cfg.resync, f.checkNamespace(object.TypeName(t), ns, f.transform), name)
		name = nil
		g, r, inf, err := f.resolveTyped(t, factory, ns, tweak)
		if sc.set == nil {
			// With a set, this runs in its goroutine later too: keep the
			// resolution made above.
			gvk, gvr = g, r
		}
		return factory, inf, err
	}, func() string { return gvr.GroupResource().String() })
	if err != nil {
		return nil, err
	}
	return newSharedInformer[T](f, gvr.GroupResource().String(), gvr, gvk, combined)
}

// newScoped builds the client-go informers of a scope, one per namespace
// (build makes the informer of one namespace in an informer factory of its
// own), and returns them as one: the informer itself for one namespace, a
// multiNamespace for several. what names the type or resource in errors;
// name, called once build has run, names the informer. The factories are
// started and shut down with f's. For an InNamespaceSet scope the result is
// always a multiNamespace that follows the set: build is called as
// namespaces come, and one startable owns the factories. Called with f.mu
// held.
func (f *Factory) newScoped(what string, sc scope, build func(ns string) (startable, cache.SharedIndexInformer, error), name func() string) (cache.SharedIndexInformer, error) {
	if sc.set != nil {
		if f.cfg.namespace != "" && !sc.shards {
			return nil, fmt.Errorf("informer for %s: InNamespaceSet: the factory watches only namespace %q (Options.Namespace)", what, f.cfg.namespace)
		}
		d := newDynamicNamespaces(f, name(), sc.set, sc.shards, build)
		f.scoped = append(f.scoped, d)
		return d.m, nil
	}
	namespaces, err := f.scopeNamespaces(what, sc)
	if err != nil {
		return nil, err
	}
	var factories []startable
	byNS := map[string]cache.SharedIndexInformer{}
	for _, ns := range namespaces {
		factory, inf, err := build(ns)
		if err != nil {
			return nil, err
		}
		factories = append(factories, factory)
		byNS[ns] = inf
	}
	f.scoped = append(f.scoped, factories...)
	if len(namespaces) == 1 {
		return byNS[namespaces[0]], nil
	}
	return newMultiNamespace(f, name(), byNS), nil
}

// scopeNamespaces returns the namespaces a scope watches: its own, or the
// factory's. A factory limited to one namespace (Options.Namespace) cannot
// serve another.
func (f *Factory) scopeNamespaces(what string, sc scope) ([]string, error) {
	if len(sc.namespaces) == 0 {
		return []string{f.cfg.namespace}, nil
	}
	if f.cfg.namespace != "" {
		for _, ns := range sc.namespaces {
			if ns != f.cfg.namespace {
				return nil, fmt.Errorf("informer for %s: InNamespaces(%s): the factory watches only namespace %q (Options.Namespace)", what, strings.Join(sc.namespaces, ","), f.cfg.namespace)
			}
		}
	}
	return sc.namespaces, nil
}

// checkNamespace wraps the transform of the informer of namespace ns. A
// cluster-scoped resource has no namespaces, and client-go ignores the
// namespace of its informers: its objects (namespace "") are reported once,
// since InNamespaces cannot narrow them.
func (f *Factory) checkNamespace(what, ns string, next cache.TransformFunc) cache.TransformFunc {
	if ns == "" {
		return next
	}
	var once sync.Once
	return func(obj any) (any, error) {
		if m, err := meta.Accessor(obj); err == nil && m.GetNamespace() != ns {
			once.Do(func() {
				f.report(fmt.Errorf("informer for %s: InNamespaces: object %q is not in namespace %q; is the resource cluster-scoped?", what, objectKey(m), ns))
			})
		}
		return next(obj)
	}
}

// resolveTyped finds the informer serving Go type t in set, building it there, over
// namespace ns and list options tweak, if it is not yet.
//
// The informer is built over a typed client as client-go's generated informers are, not
// looked up by resource (client-go's ForResource): that switch over every built-in resource would
// link every generated informer, lister and typed client into every binary
// (docs/performance.md, "Binary size").
func (f *Factory) resolveTyped(t reflect.Type, set *typedInformers, ns string, tweak func(*metav1.ListOptions)) (schema.GroupVersionKind, schema.GroupVersionResource, cache.SharedIndexInformer, error) {
	bt, err := builtinType(t)
	if err != nil {
		return schema.GroupVersionKind{}, schema.GroupVersionResource{}, nil, err
	}
	obj := reflect.New(t.Elem()).Interface().(runtime.Object)
	inf := set.InformerFor(obj, func(cs kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return newTypedInformer(bt, cs, obj, ns, tweak, resync, set.InformerName())
	})
	return bt.GVK, bt.GVR, inf, nil
}

// builtinType is the built-in type of t, or an error matching
// ErrUnsupportedType.
func builtinType(t reflect.Type) (builtin.Type, error) {
	bt, err := builtin.Of(t)
	if err != nil {
		return builtin.Type{}, fmt.Errorf("informer for %s: %w: %w", object.TypeName(t), ErrUnsupportedType, err)
	}
	return bt, nil
}

// typedList lists bt in namespace ns through cs, with list options tweak: the call of
// client-go's generated informers (builtin.Client is their typed client).
func typedList(bt builtin.Type, cs kubernetes.Interface, ns string, tweak func(*metav1.ListOptions)) func(context.Context, metav1.ListOptions) (runtime.Object, error) {
	return func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		c, err := builtin.Client[builtin.Object](bt, cs, ns)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", bt.GVR.GroupResource(), err)
		}
		if tweak != nil {
			tweak(&opts)
		}
		return c.List(ctx, opts)
	}
}

// newTypedInformer builds the informer of a built-in resource over its typed client, as
// client-go's generated New<Kind>InformerWithOptions does: the same list and watch calls, the
// namespace index, watch-list semantics as the client supports them, and the informer's
// identity under name (nil: none).
func newTypedInformer(bt builtin.Type, cs kubernetes.Interface, obj runtime.Object, ns string,
	tweak func(*metav1.ListOptions), resync time.Duration, name *cache.InformerName) cache.SharedIndexInformer {
	watchFn := func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		c, err := builtin.Client[builtin.Object](bt, cs, ns)
		if err != nil {
			return nil, fmt.Errorf("watch %s: %w", bt.GVR.GroupResource(), err)
		}
		return c.Watch(ctx, opts)
	}
	return directinformer.Resource(bt.GVR, cs, typedList(bt, cs, ns, nil), watchFn, tweak, directinformer.Options{
		ObjectType:   obj,
		ResyncPeriod: resync,
		Identifier:   name.WithResource(bt.GVR),
	})
}
