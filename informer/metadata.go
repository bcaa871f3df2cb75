package informer

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// ForMetadata returns the factory's shared metadata-only informer for gvr,
// over client-go's metadata informer factory: the API server sends only
// object metadata, so the cache holds *metav1.PartialObjectMetadata (name,
// namespace, labels, annotations, owner references, ...) instead of whole
// objects. Use it for resources whose spec and status a controller never
// reads, e.g. to find Secrets or Pods by owner on a large cluster.
//
// The factory needs Options.MetadataClient; without one the error matches
// ErrNoClient. The informer is distinct from For's typed informer of
// the same resource (another watch); its Name has a " (metadata)" suffix.
// Scope options narrow it as for For (one scope per resource per factory,
// a *ScopeConflictError otherwise).
func ForMetadata(f *Factory, gvr schema.GroupVersionResource, opts ...ScopeOption[*metav1.PartialObjectMetadata]) (Informer[*metav1.PartialObjectMetadata], error) {
	if err := validGVR(gvr); err != nil {
		return nil, err
	}
	if f == nil {
		return nil, fmt.Errorf("metadata informer for %s: nil factory: %w", gvr.GroupResource(), ErrNoClient)
	}
	if f.metadata == nil {
		return nil, fmt.Errorf("metadata informer for %s: the factory has no metadata client (set Options.MetadataClient): %w", gvr.GroupResource(), ErrNoClient)
	}
	sc, err := buildScope(opts)
	if err != nil {
		return nil, err
	}
	name := gvr.GroupResource().String() + " (metadata)"
	if sc, err = f.factoryScope(name, sc, gvr.GroupResource()); err != nil {
		return nil, err
	}
	key := registryKey{source: sourceMetadata, gvr: gvr}
	transform := func(obj any) (any, error) { return f.transformFor(key, obj) }
	inf, err := lookupOrCreate(f, key, sc, func() (*sharedInformer[*metav1.PartialObjectMetadata], error) {
		if !sc.narrowed() && f.hold == nil {
			shared := f.metadata.Informer(gvr)
			setTransform(f, name, shared, transform)
			return newSharedInformer[*metav1.PartialObjectMetadata](f, name, gvr, f.kindOf(gvr, nil), shared)
		}
		combined, err := f.newScoped(name, sc, func(p string) (startable, cache.SharedIndexInformer, error) {
			ns, tweak := sc.partition(p, f.cfg.namespace, f.cfg.tweak)
			factory := newMetadataInformers(f.cfg.metadataClient, ns, tweak, f.cfg.resync)
			shared := factory.Informer(gvr)
			setTransform(f, name, shared, f.checkNamespace(name, ns, transform))
			return factory, shared, nil
		}, func() string { return name })
		if err != nil {
			return nil, err
		}
		return newSharedInformer[*metav1.PartialObjectMetadata](f, name, gvr, f.kindOf(gvr, nil), combined)
	})
	if err != nil {
		return nil, err
	}
	return inf, nil
}

func validGVR(gvr schema.GroupVersionResource) error {
	if gvr.Version == "" || gvr.Resource == "" {
		return fmt.Errorf("informer for %q: group version resource needs a version and a resource", gvr.String())
	}
	return nil
}

// setTransform installs fn on a freshly created client-go informer. It can
// only fail if someone started that informer through the client-go factory
// behind our back; the informer still works, without our transform.
func setTransform(f *Factory, name string, inf cache.SharedIndexInformer, fn cache.TransformFunc) {
	if err := inf.SetTransform(fn); err != nil {
		f.report(fmt.Errorf("informer %s: transform not installed: %w", name, err))
	}
}
