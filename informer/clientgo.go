package informer

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/informers/admissionregistration"
	"k8s.io/client-go/informers/apiserverinternal"
	"k8s.io/client-go/informers/apps"
	"k8s.io/client-go/informers/autoscaling"
	"k8s.io/client-go/informers/batch"
	"k8s.io/client-go/informers/certificates"
	"k8s.io/client-go/informers/coordination"
	"k8s.io/client-go/informers/core"
	"k8s.io/client-go/informers/discovery"
	"k8s.io/client-go/informers/events"
	"k8s.io/client-go/informers/extensions"
	"k8s.io/client-go/informers/flowcontrol"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/informers/lifecycle"
	"k8s.io/client-go/informers/networking"
	"k8s.io/client-go/informers/node"
	"k8s.io/client-go/informers/policy"
	"k8s.io/client-go/informers/rbac"
	"k8s.io/client-go/informers/resource"
	"k8s.io/client-go/informers/scheduling"
	"k8s.io/client-go/informers/storage"
	"k8s.io/client-go/informers/storagemigration"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/internal/builtin"
)

// SharedInformerFactory returns client-go's informers.SharedInformerFactory
// over this factory's informers of built-in types, for code written against
// client-go's generated informers (kube-controller-manager's controllers):
// an informer taken from it is the one For hands out for the same type, with
// the same watch, transforms and accounting, and the other way round.
// As with client-go's factory, an informer taken from it after Start runs
// from the next Start. Starting, waiting for and shutting down the returned
// factory start, wait for and shut down this Factory.
func (f *Factory) SharedInformerFactory() informers.SharedInformerFactory {
	return clientGoFactory{f: &Factory{factory: f.factory}}
}

// clientGoFactory is client-go's SharedInformerFactory over a Factory's
// typedInformers: the generated group accessors call its InformerFor.
type clientGoFactory struct{ f *Factory }

var _ informers.SharedInformerFactory = clientGoFactory{}

func (c clientGoFactory) Start(stopCh <-chan struct{}) { c.f.Start(wait.ContextForChannel(stopCh)) }

func (c clientGoFactory) StartWithContext(ctx context.Context) { c.f.Start(ctx) }

func (c clientGoFactory) Shutdown() { c.f.Shutdown() }

func (c clientGoFactory) WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool {
	return c.f.typed.WaitForCacheSync(stopCh)
}

func (c clientGoFactory) WaitForCacheSyncWithContext(ctx context.Context) cache.SyncResult {
	return c.f.typed.WaitForCacheSyncWithContext(ctx)
}

func (c clientGoFactory) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	return c.f.typed.InformerFor(obj, newFunc)
}

func (c clientGoFactory) InformerName() *cache.InformerName { return c.f.typed.InformerName() }

// ForResource returns the informer of a built-in resource, as client-go's
// does.
func (c clientGoFactory) ForResource(gvr schema.GroupVersionResource) (informers.GenericInformer, error) {
	t, ok := builtin.TypeOf(gvr)
	if !ok {
		return nil, fmt.Errorf("no informer found for %v", gvr)
	}
	_, _, inf, err := c.f.resolveTyped(t, c.f.typed, c.f.cfg.namespace, c.f.cfg.tweak)
	if err != nil {
		return nil, err
	}
	return genericInformer{inf: inf, gr: gvr.GroupResource()}, nil
}

type genericInformer struct {
	inf cache.SharedIndexInformer
	gr  schema.GroupResource
}

func (g genericInformer) Informer() cache.SharedIndexInformer { return g.inf }

func (g genericInformer) Lister() cache.GenericLister {
	return cache.NewGenericLister(g.inf.GetIndexer(), g.gr)
}

func (c clientGoFactory) tweak() internalinterfaces.TweakListOptionsFunc { return c.f.cfg.tweak }

func (c clientGoFactory) Admissionregistration() admissionregistration.Interface {
	return admissionregistration.New(c, c.f.cfg.namespace, c.tweak())
}

func (c clientGoFactory) Internal() apiserverinternal.Interface {
	return apiserverinternal.New(c, c.f.cfg.namespace, c.tweak())
}

func (c clientGoFactory) Apps() apps.Interface { return apps.New(c, c.f.cfg.namespace, c.tweak()) }

func (c clientGoFactory) Autoscaling() autoscaling.Interface {
	return autoscaling.New(c, c.f.cfg.namespace, c.tweak())
}

func (c clientGoFactory) Batch() batch.Interface { return batch.New(c, c.f.cfg.namespace, c.tweak()) }

func (c clientGoFactory) Certificates() certificates.Interface {
	return certificates.New(c, c.f.cfg.namespace, c.tweak())
}

func (c clientGoFactory) Coordination() coordination.Interface {
	return coordination.New(c, c.f.cfg.namespace, c.tweak())
}

func (c clientGoFactory) Core() core.Interface { return core.New(c, c.f.cfg.namespace, c.tweak()) }

func (c clientGoFactory) Discovery() discovery.Interface {
	return discovery.New(c, c.f.cfg.namespace, c.tweak())
}

func (c clientGoFactory) Events() events.Interface {
	return events.New(c, c.f.cfg.namespace, c.tweak())
}

func (c clientGoFactory) Extensions() extensions.Interface {
	return extensions.New(c, c.f.cfg.namespace, c.tweak())
}

func (c clientGoFactory) Flowcontrol() flowcontrol.Interface {
	return flowcontrol.New(c, c.f.cfg.namespace, c.tweak())
}

func (c clientGoFactory) Lifecycle() lifecycle.Interface {
	return lifecycle.New(c, c.f.cfg.namespace, c.tweak())
}

func (c clientGoFactory) Networking() networking.Interface {
	return networking.New(c, c.f.cfg.namespace, c.tweak())
}

func (c clientGoFactory) Node() node.Interface { return node.New(c, c.f.cfg.namespace, c.tweak()) }

func (c clientGoFactory) Policy() policy.Interface {
	return policy.New(c, c.f.cfg.namespace, c.tweak())
}

func (c clientGoFactory) Rbac() rbac.Interface { return rbac.New(c, c.f.cfg.namespace, c.tweak()) }

func (c clientGoFactory) Resource() resource.Interface {
	return resource.New(c, c.f.cfg.namespace, c.tweak())
}

func (c clientGoFactory) Scheduling() scheduling.Interface {
	return scheduling.New(c, c.f.cfg.namespace, c.tweak())
}

func (c clientGoFactory) Storage() storage.Interface {
	return storage.New(c, c.f.cfg.namespace, c.tweak())
}

func (c clientGoFactory) Storagemigration() storagemigration.Interface {
	return storagemigration.New(c, c.f.cfg.namespace, c.tweak())
}
