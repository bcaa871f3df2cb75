package informer

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/internal/object"
	"github.com/ctrlkit/ctrlkit/internal/unstructuredconv"
)

// ForResource returns the factory's shared informer for a custom resource,
// served by client-go's dynamic shared informer factory. T is the resource's
// Go type (a pointer to a struct with TypeMeta and ObjectMeta and a
// DeepCopyObject method), or *unstructured.Unstructured to keep objects
// untyped.
//
// Objects are converted from unstructured to T once, as they enter the cache
// (a transform), so listers and handlers hand out T with no per-read
// conversion, through customresource's converter. An object that fails
// conversion is reported to the factory's error handler with its key and the
// field that did not fit (spec.replicas: expected int32, got string "three"),
// and stays in the cache unconverted: handlers
// skip it, List leaves it out and Get of its key returns an error matching
// ErrUnexpectedType, until a later version converts (handlers see that
// version as an add). Deleting an object whose last version did not convert
// reaches OnDelete with a skeleton of its key (DeleteInfo.ObjectMissing).
//
// The informer's GVK (which Owns and the owner-keyed mappings need) comes from
// T's name when T is named after its kind (PodSet, served as podsets), else
// from the factory's scheme (Options.Scheme); it is empty when neither tells.
//
// Every call for gvr returns the same informer; asking for the same gvr with
// another T is an error matching ErrUnsupportedType. Scope options narrow
// the informer as for For (same rules: one scope per resource per factory,
// a *ScopeConflictError otherwise). The factory needs Options.DynamicClient; without
// one the error matches ErrNoClient.
func ForResource[T Object](f *Factory, gvr schema.GroupVersionResource, opts ...ScopeOption[T]) (Informer[T], error) {
	if err := validGVR(gvr); err != nil {
		return nil, err
	}
	if f == nil {
		return nil, fmt.Errorf("informer for %s: nil factory: %w", gvr.GroupResource(), ErrNoClient)
	}
	if f.dynamic == nil {
		return nil, fmt.Errorf("informer for %s: the factory has no dynamic client (set Options.DynamicClient): %w", gvr.GroupResource(), ErrNoClient)
	}
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("informer for %s: %w: %s is not a pointer to a struct", gvr.GroupResource(), ErrUnsupportedType, object.TypeName(t))
	}
	sc, err := buildScope(opts)
	if err != nil {
		return nil, err
	}
	name := gvr.GroupResource().String()
	if sc, err = f.factoryScope(name, sc, gvr.GroupResource()); err != nil {
		return nil, err
	}
	key := registryKey{source: sourceDynamic, gvr: gvr}
	inf, err := lookupOrCreate(f, key, sc, func() (*sharedInformer[T], error) {
		if !sc.narrowed() && f.hold == nil {
			shared := f.dynamic.Informer(gvr)
			setTransform(f, name, shared, convertTransform[T](f, key, name))
			return newSharedInformer[T](f, name, gvr, f.kindOf(gvr, t), shared)
		}
		combined, err := f.newScoped(name, sc, func(p string) (startable, cache.SharedIndexInformer, error) {
			ns, tweak := sc.partition(p, f.cfg.namespace, f.cfg.tweak)
			factory := newDynamicInformers(f.cfg.dynamicClient, ns, tweak, f.cfg.resync)
			shared := factory.Informer(gvr)
			setTransform(f, name, shared, f.checkNamespace(name, ns, convertTransform[T](f, key, name)))
			return factory, shared, nil
		}, func() string { return name })
		if err != nil {
			return nil, err
		}
		return newSharedInformer[T](f, name, gvr, f.kindOf(gvr, t), combined)
	})
	if err != nil {
		return nil, err
	}
	return inf, nil
}

// ReasonUndecodable is the reason of the Warning event Options.EventRecorder
// records on a custom resource that does not convert to its Go type.
const ReasonUndecodable = "Undecodable"

// reportUndecodable reports a custom resource that failed conversion, each
// time a version of it passes the transform (once per version, and once more
// when its delete carries that version): to the error handler, and as an
// event on the object when the factory has a recorder. The object stays in the
// cache unconverted and never reaches a typed handler (so never a queue).
func (f *Factory) reportUndecodable(u *unstructured.Unstructured, err error) {
	f.report(err)
	if f.cfg.recorder != nil {
		f.cfg.recorder.Eventf(u, corev1.EventTypeWarning, ReasonUndecodable, "Cannot decode this object: %v", err)
	}
}

// convertTransform strips managedFields (through the factory transform, while
// the object is still a map: cheaper, and T never sees them), converts to T
// and then runs T's own transforms. The converter is customresource's: it
// refuses objects of another apiVersion, turns a panic in T's UnmarshalJSON
// into an error, and names the field that did not fit.
func convertTransform[T Object](f *Factory, key registryKey, name string) cache.TransformFunc {
	own := func(obj any) (any, error) { return f.transformFor(key, obj) }
	if reflect.TypeFor[T]() == reflect.TypeFor[*unstructured.Unstructured]() {
		return own
	}
	// Cannot fail: ForResource checked that T is a pointer to a struct.
	conv, err := unstructuredconv.New[T](key.gvr.GroupVersion().WithKind(""))
	if err != nil {
		f.report(fmt.Errorf("informer %s: %w", name, err))
		return own
	}
	return func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			// Already converted (client-go passes objects once, but a
			// transform must be idempotent).
			return own(obj)
		}
		if !f.cfg.keepManagedFields {
			u.SetManagedFields(nil)
		}
		typed, err := conv.FromUnstructured(u.UnstructuredContent())
		if err != nil {
			f.reportUndecodable(u, fmt.Errorf("informer %s: convert %s to %s: %w", name, objectKey(u), object.TypeName(reflect.TypeFor[T]()), err))
			return u, nil
		}
		return own(typed)
	}
}
