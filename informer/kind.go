package informer

import (
	"go/token"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// kindOf is the kind of the objects of gvr, whose Go type is t (nil for metadata-only
// informers), or the zero GVK when nothing says. Owns and the owner-keyed mappings need it
// before the first object arrives, so it cannot be read off the objects. In order:
//
//   - a scheme that registered t in gvr's group version (Options.Scheme's, then client-go's);
//   - a kind of gvr's group version in those schemes whose plural is gvr's resource;
//   - t's own name, when it is exported (kinds are) and its plural is gvr's resource: a
//     custom resource's Go type is named after its kind (PodSet for podsets), so most need
//     no registration at all.
//
// A guessed plural must match exactly, so an irregular plural gives no kind rather than a
// wrong one; register such a type in the factory's scheme.
func (f *Factory) kindOf(gvr schema.GroupVersionResource, t reflect.Type) schema.GroupVersionKind {
	gv := gvr.GroupVersion()
	schemes := []*runtime.Scheme{scheme.Scheme}
	if f.cfg.scheme != nil {
		schemes = []*runtime.Scheme{f.cfg.scheme, scheme.Scheme}
	}
	typed := t != nil && t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct &&
		t != reflect.TypeFor[*unstructured.Unstructured]()
	if typed {
		for _, s := range schemes {
			if gvk, ok := registeredKind(s, gv, t.Elem()); ok {
				return gvk
			}
		}
	}
	for _, s := range schemes {
		for kind := range s.KnownTypes(gv) {
			if pluralIs(gv.WithKind(kind), gvr) {
				return gv.WithKind(kind)
			}
		}
	}
	if typed && token.IsExported(t.Elem().Name()) && pluralIs(gv.WithKind(t.Elem().Name()), gvr) {
		return gv.WithKind(t.Elem().Name())
	}
	return schema.GroupVersionKind{}
}

// registeredKind is the one kind s registered t under in gv.
func registeredKind(s *runtime.Scheme, gv schema.GroupVersion, t reflect.Type) (schema.GroupVersionKind, bool) {
	var found schema.GroupVersionKind
	n := 0
	for kind, known := range s.KnownTypes(gv) {
		if known == t {
			found, n = gv.WithKind(kind), n+1
		}
	}
	return found, n == 1
}

func pluralIs(gvk schema.GroupVersionKind, gvr schema.GroupVersionResource) bool {
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural == gvr
}
