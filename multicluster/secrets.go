package multicluster

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/informer"
)

// DefaultSecretKey is the data key Secrets reads a kubeconfig from unless
// told otherwise.
const DefaultSecretKey = "kubeconfig"

// Secrets is a Provider of the clusters whose kubeconfigs are Secrets in a
// namespace of the cluster Client reaches (the hub): a cluster per Secret,
// engaged when it appears, engaged again when its kubeconfig changes (a
// rotated credential), disengaged when it is deleted or stops matching. A
// Secret whose kubeconfig is missing or cannot be read is logged as an error
// naming it, and engages nothing until it is fixed. The hub's client needs
// list and watch on Secrets in Namespace.
type Secrets struct {
	// Client reaches the hub that holds the Secrets.
	Client kubernetes.Interface
	// Namespace holds the Secrets; required.
	Namespace string
	// LabelSelector narrows the Secrets ("" means all of Namespace's).
	LabelSelector string
	// Key is the data key of the kubeconfig: DefaultSecretKey when empty
	// (Cluster API's <cluster>-kubeconfig Secrets use "value").
	Key string
	// ClusterName names a Secret's cluster; nil means the Secret's name.
	ClusterName func(*corev1.Secret) string
}

// Run engages the clusters of the Secrets until ctx ends.
func (s *Secrets) Run(ctx context.Context, e Engager) error {
	if s.Client == nil || s.Namespace == "" {
		return fmt.Errorf("multicluster: Secrets: %w: a Client and a Namespace are required", ErrInvalidOptions)
	}
	logger := klog.FromContext(ctx).WithValues("provider", "secrets", "namespace", s.Namespace)
	f := informer.NewFactory(s.Client, informer.Options{Namespace: s.Namespace, Logger: logger})
	defer f.Shutdown()
	opts := []informer.ScopeOption[*corev1.Secret]{}
	if s.LabelSelector != "" {
		opts = append(opts, informer.WithLabelSelector[*corev1.Secret](s.LabelSelector))
	}
	inf, err := informer.For[*corev1.Secret](f, opts...)
	if err != nil {
		return fmt.Errorf("multicluster: Secrets: %w", err)
	}
	w := newFollower(ctx, e, logger)
	defer w.stop()
	reg, err := inf.AddHandler(informer.HandlerFuncs[*corev1.Secret]{
		OnAdd:    func(obj *corev1.Secret, _ bool) { s.apply(w, obj) },
		OnUpdate: func(_, obj *corev1.Secret) { s.apply(w, obj) },
		OnDelete: func(obj *corev1.Secret) { w.remove(obj.Name) },
	})
	if err != nil {
		return fmt.Errorf("multicluster: Secrets: %w", err)
	}
	defer func() { _ = inf.RemoveHandler(reg) }()
	f.Start(ctx)
	<-ctx.Done()
	return nil
}

func (s *Secrets) apply(w *follower, secret *corev1.Secret) {
	key := s.Key
	if key == "" {
		key = DefaultSecretKey
	}
	name := secret.Name
	if s.ClusterName != nil {
		name = s.ClusterName(secret)
	}
	data := secret.Data[key]
	if len(data) == 0 {
		w.apply(secret.Name, name, "", nil, fmt.Errorf("the Secret has no kubeconfig in data key %q", key))
		return
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		err = fmt.Errorf("the kubeconfig of the Secret (data key %q) cannot be read: %w", key, err)
	}
	w.apply(secret.Name, name, string(data), cfg, err)
}

// follower engages the cluster each object of a Provider's (a Secret, a
// ClusterProfile) describes, engaging it again when what it says changes
// and disengaging it when the object goes.
type follower struct {
	e      Engager
	ctx    context.Context
	logger klog.Logger

	mu      sync.Mutex
	engaged map[string]*followed // by object
}

// followed is the cluster an object engaged, with what it was engaged from.
type followed struct {
	name        string
	fingerprint string
	cancel      context.CancelFunc
}

func newFollower(ctx context.Context, e Engager, logger klog.Logger) *follower {
	return &follower{e: e, ctx: ctx, logger: logger, engaged: map[string]*followed{}}
}

// apply engages cluster from object's cfg, unless it is engaged with the
// same fingerprint already; an error (the object says nothing usable) is
// logged, naming the object, and disengages what it engaged before.
func (w *follower) apply(object, cluster, fingerprint string, cfg *rest.Config, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if f, ok := w.engaged[object]; ok && err == nil && f.name == cluster && f.fingerprint == fingerprint {
		return // a resync, or a change that is not the connection's
	}
	logger := w.logger.WithValues("object", object, "cluster", cluster)
	w.disengage(object) // a cluster renamed leaves under its old name
	if err != nil {
		logger.Error(err, "Engaging nothing for it until it is fixed")
		return
	}
	ctx, cancel := context.WithCancel(w.ctx)
	if err := w.e.Engage(ctx, cluster, Connection{Config: cfg}); err != nil {
		cancel()
		logger.Error(err, "Cannot engage the cluster")
		return
	}
	w.engaged[object] = &followed{name: cluster, fingerprint: fingerprint, cancel: cancel}
}

func (w *follower) remove(object string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.disengage(object)
}

// stop disengages every cluster.
func (w *follower) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for object := range w.engaged {
		w.disengage(object)
	}
}

// disengage is called with w.mu held.
func (w *follower) disengage(object string) {
	if f, ok := w.engaged[object]; ok {
		f.cancel()
		delete(w.engaged, object)
	}
}
