package multicluster

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
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
	w := &secretWatch{s: s, e: e, ctx: ctx, logger: logger, engaged: map[string]*secretCluster{}}
	reg, err := inf.AddHandler(informer.HandlerFuncs[*corev1.Secret]{
		OnAdd:    func(obj *corev1.Secret, _ bool) { w.apply(obj) },
		OnUpdate: func(_, obj *corev1.Secret) { w.apply(obj) },
		OnDelete: func(obj *corev1.Secret) { w.remove(obj.Name) },
	})
	if err != nil {
		return fmt.Errorf("multicluster: Secrets: %w", err)
	}
	defer func() { _ = inf.RemoveHandler(reg) }()
	f.Start(ctx)
	<-ctx.Done()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, sc := range w.engaged {
		sc.cancel()
	}
	return nil
}

// secretWatch engages the cluster of each Secret it is handed.
type secretWatch struct {
	s      *Secrets
	e      Engager
	ctx    context.Context
	logger klog.Logger

	mu      sync.Mutex
	engaged map[string]*secretCluster // by Secret name
}

// secretCluster is the cluster a Secret engaged, with the kubeconfig it was
// engaged with.
type secretCluster struct {
	name       string
	kubeconfig []byte
	cancel     context.CancelFunc
}

func (w *secretWatch) apply(secret *corev1.Secret) {
	key := w.s.Key
	if key == "" {
		key = DefaultSecretKey
	}
	name := secret.Name
	if w.s.ClusterName != nil {
		name = w.s.ClusterName(secret)
	}
	data := secret.Data[key]
	w.mu.Lock()
	defer w.mu.Unlock()
	if sc, ok := w.engaged[secret.Name]; ok && sc.name == name && bytes.Equal(sc.kubeconfig, data) {
		return // a resync, or a change that is not the kubeconfig's
	}
	logger := w.logger.WithValues("secret", secret.Name, "cluster", name)
	if len(data) == 0 {
		logger.Error(nil, "Secret has no kubeconfig: engaging nothing for it", "key", key)
		w.disengage(secret.Name)
		return
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		logger.Error(err, "Secret's kubeconfig cannot be read: engaging nothing for it", "key", key)
		w.disengage(secret.Name)
		return
	}
	w.disengage(secret.Name) // a cluster renamed by ClusterName leaves under its old name
	ctx, cancel := context.WithCancel(w.ctx)
	if err := w.e.Engage(ctx, name, Connection{Config: cfg}); err != nil {
		cancel()
		logger.Error(err, "Cannot engage the Secret's cluster")
		return
	}
	w.engaged[secret.Name] = &secretCluster{name: name, kubeconfig: bytes.Clone(data), cancel: cancel}
}

func (w *secretWatch) remove(secretName string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.disengage(secretName)
}

// disengage is called with w.mu held.
func (w *secretWatch) disengage(secretName string) {
	if sc, ok := w.engaged[secretName]; ok {
		sc.cancel()
		delete(w.engaged, secretName)
	}
}
