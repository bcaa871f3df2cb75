package propagator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
)

const (
	// LabelPropagate marks a ConfigMap of the source namespace for propagation ("true").
	LabelPropagate = "ctrlkit.dev/propagate"
	// AnnotationTargets on a source ConfigMap is the label selector of its target namespaces.
	AnnotationTargets = "ctrlkit.dev/target-namespaces"
	// DefaultTargets selects the target namespaces of a source without AnnotationTargets.
	DefaultTargets = LabelPropagate + "=true"
	// AnnotationSource on a copy names its source, "namespace/name". It is how copies are
	// found (an index) and how an event on a copy reaches its source's key.
	AnnotationSource = "ctrlkit.dev/propagated-from"
	// Name is the controller's name, in logs and metrics.
	Name = "configmap-propagator"

	indexSource = "propagator.ctrlkit.dev/source"
)

// Options configure the propagator. The zero value is valid.
type Options struct {
	// SourceNamespace holds the ConfigMaps to propagate. Default "ctrlkit-system".
	SourceNamespace string
	// Workers reconcile sources in parallel. Default 1.
	Workers int
	// RetryTakenAfter is when to look again at a namespace whose ConfigMap of the source's name
	// is not a copy. Default 1 minute.
	RetryTakenAfter time.Duration
}

// Propagator is the controller: it embeds the ctrlkit worker loop, so a Manager runs it as it
// is, and tests can also call its Reconcile directly.
type Propagator struct {
	*controller.Controller[controller.Key]

	client     kubernetes.Interface
	configMaps informer.Informer[*corev1.ConfigMap]
	namespaces informer.Informer[*corev1.Namespace]
	opts       Options
}

// New returns the propagator as a controller of source ConfigMap keys, on informers from f
// (shared with every other controller of f). Add it to a Manager, or Run it.
func New(f *informer.Factory, client kubernetes.Interface, opts Options) (*Propagator, error) {
	p, err := newPropagator(f, client, opts)
	if err != nil {
		return nil, err
	}
	if p.Controller, err = controller.New(Name, p, controller.Options[controller.Key]{Workers: p.opts.Workers}); err != nil {
		return nil, err
	}
	// A source maps to itself and a copy to its source; a namespace change (labels, a new
	// namespace) can change the targets of every source.
	if err := controller.Watch(p.Controller, p.configMaps, p.sourceOf); err != nil {
		return nil, err
	}
	if err := controller.Watch(p.Controller, p.namespaces, func(*corev1.Namespace) []controller.Key { return p.allSources() }); err != nil {
		return nil, err
	}
	return p, nil
}

func newPropagator(f *informer.Factory, client kubernetes.Interface, opts Options) (*Propagator, error) {
	if opts.SourceNamespace == "" {
		opts.SourceNamespace = "ctrlkit-system"
	}
	if opts.RetryTakenAfter <= 0 {
		opts.RetryTakenAfter = time.Minute
	}
	p := &Propagator{client: client, opts: opts}
	var err error
	if p.configMaps, err = informer.For[*corev1.ConfigMap](f); err != nil {
		return nil, err
	}
	if p.namespaces, err = informer.For[*corev1.Namespace](f); err != nil {
		return nil, err
	}
	if err := p.configMaps.AddIndex(indexSource, func(cm *corev1.ConfigMap) ([]string, error) {
		if src := cm.Annotations[AnnotationSource]; src != "" {
			return []string{src}, nil
		}
		return nil, nil
	}); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Propagator) sourceOf(cm *corev1.ConfigMap) []controller.Key {
	if cm.Namespace == p.opts.SourceNamespace {
		return []controller.Key{controller.KeyFromObject(cm)}
	}
	if key, err := controller.ParseKey(cm.Annotations[AnnotationSource]); err == nil {
		return []controller.Key{key}
	}
	return nil
}

// allSources are the sources a namespace change may concern. A source whose selector does not
// parse is left out: no namespace can change what it selects, and reconciling it again would
// only log the same bad input once per namespace event; its own edits still reach it.
func (p *Propagator) allSources() []controller.Key {
	srcs, _ := p.configMaps.Lister().Namespace(p.opts.SourceNamespace).List(labels.SelectorFromSet(labels.Set{LabelPropagate: "true"}))
	keys := make([]controller.Key, 0, len(srcs))
	for _, src := range srcs {
		if _, err := targetSelector(src); err != nil {
			continue
		}
		keys = append(keys, controller.KeyFromObject(src))
	}
	return keys
}

// targetSelector parses a source's target-namespace selector (DefaultTargets when unset).
func targetSelector(src *corev1.ConfigMap) (labels.Selector, error) {
	targets := src.Annotations[AnnotationTargets]
	if targets == "" {
		targets = DefaultTargets
	}
	return labels.Parse(targets)
}

// Reconcile makes the copies of one source ConfigMap match it: present and equal in every
// target namespace, absent everywhere else.
func (p *Propagator) Reconcile(ctx context.Context, key controller.Key) (controller.Result, error) {
	logger := klog.FromContext(ctx)
	want := map[string]bool{} // target namespaces; none when the source is gone or unlabelled
	src, err := p.configMaps.Lister().Get(key.Namespace, key.Name)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return controller.Result{}, err
	case src.Labels[LabelPropagate] == "true":
		sel, err := targetSelector(src)
		if err != nil {
			// Retrying cannot fix a typo; the next edit of the ConfigMap brings it back here.
			// Copies stay as they are rather than vanish because of bad input.
			return controller.Result{}, controller.Terminal(fmt.Errorf("configmap %s: annotation %s: %w", key, AnnotationTargets, err))
		}
		nss, err := p.namespaces.Lister().List(sel)
		if err != nil {
			return controller.Result{}, err
		}
		for _, ns := range nss {
			if ns.Name != key.Namespace && ns.Status.Phase != corev1.NamespaceTerminating {
				want[ns.Name] = true
			}
		}
	}

	var errs []error
	copies, err := p.configMaps.ByIndex(indexSource, key.String())
	if err != nil {
		return controller.Result{}, err
	}
	for _, cp := range copies {
		if !want[cp.Namespace] {
			// The cache can lag (a restart onto a lagging API server): deleting on its word
			// alone once took copies away from namespaces still selected. The API server must
			// agree; if not, the cache's catching up brings the key back.
			if keep, err := p.wantedLive(ctx, key, cp.Namespace); err != nil || keep {
				errs = append(errs, err) // nil when kept: errors.Join drops it
				continue
			}
			logger.Info("Deleting copy", "copy", klog.KObj(cp))
			err := p.client.CoreV1().ConfigMaps(cp.Namespace).Delete(ctx, cp.Name, metav1.DeleteOptions{
				Preconditions: &metav1.Preconditions{UID: &cp.UID}}) // never a same-named newcomer
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
	}
	var result controller.Result
	for ns := range want {
		desired := copyOf(src, ns)
		cur, err := p.configMaps.Lister().Get(ns, key.Name)
		switch {
		case apierrors.IsNotFound(err):
			logger.Info("Creating copy", "copy", klog.KObj(desired))
			_, err = p.client.CoreV1().ConfigMaps(ns).Create(ctx, desired, metav1.CreateOptions{})
		case err != nil:
		case cur.Annotations[AnnotationSource] != key.String():
			// Someone else's ConfigMap has the name: never overwrite it. Its deletion does not
			// map back to this source (it is not a copy), so look again later.
			logger.V(1).Info("Target name taken by a ConfigMap that is not a copy; will retry", "configMap", klog.KObj(cur))
			result.RequeueAfter = p.opts.RetryTakenAfter
		case !maps.Equal(cur.Data, desired.Data) || !maps.EqualFunc(cur.BinaryData, desired.BinaryData, bytes.Equal) || !maps.Equal(cur.Labels, desired.Labels):
			logger.Info("Updating copy", "copy", klog.KObj(cur))
			updated := cur.DeepCopy()
			updated.Data, updated.BinaryData, updated.Labels = desired.Data, desired.BinaryData, desired.Labels
			_, err = p.client.CoreV1().ConfigMaps(ns).Update(ctx, updated, metav1.UpdateOptions{})
		}
		if err != nil && !apierrors.IsAlreadyExists(err) { // AlreadyExists: the cache is behind; its event requeues
			errs = append(errs, err)
		}
	}
	return result, errors.Join(errs...)
}

// wantedLive reports whether, as the API server (not the cache) has it, the source key still
// wants a copy in namespace ns, or has a selector that does not parse (copies then stay).
func (p *Propagator) wantedLive(ctx context.Context, key controller.Key, ns string) (bool, error) {
	src, err := p.client.CoreV1().ConfigMaps(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
	if err != nil || src.Labels[LabelPropagate] != "true" || ns == key.Namespace {
		return false, client.IgnoreNotFound(err)
	}
	sel, err := targetSelector(src)
	if err != nil {
		return true, nil
	}
	target, err := p.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return target.Status.Phase != corev1.NamespaceTerminating && sel.Matches(labels.Set(target.Labels)), nil
}

// copyOf is the copy of src that belongs in namespace ns.
func copyOf(src *corev1.ConfigMap, ns string) *corev1.ConfigMap {
	lbls := maps.Clone(src.Labels)
	delete(lbls, LabelPropagate) // a copy is not itself a source
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: src.Name, Namespace: ns, Labels: lbls,
			Annotations: map[string]string{AnnotationSource: src.Namespace + "/" + src.Name}},
		Data:       maps.Clone(src.Data),
		BinaryData: maps.Clone(src.BinaryData),
	}
}
