package fleetpolicy

import (
	"context"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/multicluster"
)

const (
	// LabelBaseline, "true" on a Namespace of an engaged cluster, asks for
	// the baseline ConfigMap in it.
	LabelBaseline = "fleet.ctrlkit.dev/baseline"
	// LabelManaged marks the ConfigMaps this controller writes: each
	// cluster caches only those.
	LabelManaged = "fleet.ctrlkit.dev/managed"
	// DefaultName is the name of the source ConfigMap in the hub and of its
	// copies.
	DefaultName = "fleet-baseline"
	// FieldManager names this controller's writes.
	FieldManager = "fleet-policy"
)

// Options configure the controller.
type Options struct {
	// SourceNamespace is the hub namespace of the source ConfigMap; required.
	SourceNamespace string
	// Name is the source's name and its copies'; DefaultName when empty.
	Name string
	// Workers reconcile in parallel; 0 means 2.
	Workers int
}

var errNoNamespace = errors.New("fleetpolicy: Options.SourceNamespace is required")

// New returns the controller: hub is the hub's informer factory (a
// Manager's), fleet the clusters it keeps the baseline in.
func New(hub *informer.Factory, fleet *multicluster.Fleet, opts Options) (*controller.Controller[multicluster.Key], error) {
	if opts.SourceNamespace == "" {
		return nil, errNoNamespace
	}
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	if opts.Workers == 0 {
		opts.Workers = 2
	}
	sources, err := informer.For[*corev1.ConfigMap](hub, informer.InNamespaces[*corev1.ConfigMap](opts.SourceNamespace))
	if err != nil {
		return nil, fmt.Errorf("fleetpolicy: hub ConfigMaps: %w", err)
	}
	r := &reconciler{fleet: fleet, sources: sources, opts: opts}
	c, err := multicluster.NewController(fleet, "fleet-policy", r, controller.Options[multicluster.Key]{Workers: opts.Workers})
	if err != nil {
		return nil, err
	}
	// Every Namespace, not only labelled ones: one whose label is removed
	// must still reach Reconcile, to delete its copy (a narrowed cache
	// would only see it leave). A cluster has few Namespaces.
	namespaces := multicluster.For[*corev1.Namespace]()
	copies := copiesIn
	if err := multicluster.Watch(fleet, c, namespaces, controller.EnqueueObject); err != nil {
		return nil, err
	}
	if err := multicluster.Owns(fleet, c, copies, namespaces); err != nil {
		return nil, err
	}
	// The source maps to every labelled Namespace of every engaged cluster.
	if err := controller.Watch(c, sources, r.everyTarget); err != nil {
		return nil, err
	}
	return c, nil
}

type reconciler struct {
	fleet   *multicluster.Fleet
	sources informer.Informer[*corev1.ConfigMap]
	opts    Options
}

// everyTarget maps the hub's source to the key of each labelled Namespace
// in each engaged cluster, read from the clusters' caches.
func (r *reconciler) everyTarget(cm *corev1.ConfigMap) []multicluster.Key {
	if cm.Name != r.opts.Name {
		return nil
	}
	var keys []multicluster.Key
	for _, name := range r.fleet.Clusters() {
		cl, err := r.fleet.Get(name)
		if err != nil {
			continue
		}
		nss, err := r.namespaces(cl)
		if err != nil {
			continue
		}
		list, err := nss.Lister().List(labels.Everything())
		if err != nil {
			continue
		}
		for _, ns := range list {
			if ns.Labels[LabelBaseline] != "true" {
				continue
			}
			keys = append(keys, multicluster.Key{Cluster: name, Key: controller.Key{Name: ns.Name}})
		}
	}
	return keys
}

// copiesIn is the cluster's informer of the ConfigMaps this controller
// writes, and only those.
func copiesIn(cl *multicluster.Cluster) (informer.Informer[*corev1.ConfigMap], error) {
	return informer.For[*corev1.ConfigMap](cl.Factory, informer.WithLabelSelector[*corev1.ConfigMap](LabelManaged+"=true"))
}

func (r *reconciler) namespaces(cl *multicluster.Cluster) (informer.Informer[*corev1.Namespace], error) {
	return informer.For[*corev1.Namespace](cl.Factory)
}

func (r *reconciler) Reconcile(ctx context.Context, key multicluster.Key) (controller.Result, error) {
	logger := klog.FromContext(ctx)
	cl, err := r.fleet.Get(key.Cluster)
	if err != nil {
		return controller.Result{}, nil // disengaged while the key waited: nothing to do there any more
	}
	nss, err := r.namespaces(cl)
	if err != nil {
		return controller.Result{}, err
	}
	copies, err := copiesIn(cl)
	if err != nil {
		return controller.Result{}, err
	}
	ns, err := nss.Lister().Get("", key.Name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil // gone: its ConfigMap goes with it
	}
	if err != nil {
		return controller.Result{}, err
	}
	current, err := copies.Lister().Namespace(ns.Name).Get(r.opts.Name)
	if apierrors.IsNotFound(err) {
		current = nil
	} else if err != nil {
		return controller.Result{}, err
	}
	cms := cl.Client.CoreV1().ConfigMaps(ns.Name)
	source, err := r.sources.Lister().Namespace(r.opts.SourceNamespace).Get(r.opts.Name)
	wanted := ns.Labels[LabelBaseline] == "true" && err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return controller.Result{}, err
	}
	switch {
	case !wanted && current != nil && metav1.IsControlledBy(current, ns):
		logger.V(1).Info("Deleting the baseline: not wanted any more")
		err := cms.Delete(ctx, current.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &current.UID}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return controller.Result{}, nil
		}
		return controller.Result{}, err
	case !wanted:
		return controller.Result{}, nil
	case current == nil:
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: r.opts.Name,
			Labels:          map[string]string{LabelManaged: "true"},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ns, corev1.SchemeGroupVersion.WithKind("Namespace"))}},
			Data: maps.Clone(source.Data)}
		logger.V(1).Info("Creating the baseline")
		_, err := cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: FieldManager})
		if apierrors.IsAlreadyExists(err) {
			// Someone else's ConfigMap of that name (not labelled as
			// ours, so not in the cache): never overwritten.
			logger.Info("A ConfigMap of the baseline's name exists and is not ours: leaving it", "name", r.opts.Name)
			return controller.Result{}, nil
		}
		return controller.Result{}, err
	case !metav1.IsControlledBy(current, ns):
		logger.Info("The baseline's ConfigMap is not controlled by its Namespace: leaving it", "name", r.opts.Name)
		return controller.Result{}, nil
	case !maps.Equal(current.Data, source.Data):
		cm := current.DeepCopy()
		cm.Data = maps.Clone(source.Data)
		logger.V(1).Info("Updating the baseline")
		_, err := cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: FieldManager})
		return controller.Result{}, err
	}
	return controller.Result{}, nil
}
