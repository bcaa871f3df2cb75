package multicluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Provider engages and disengages clusters at run time: a list, the
// kubeconfig Secrets of a namespace, a cluster inventory. A Fleet runs it.
type Provider interface {
	// Run engages clusters through e until ctx ends (each Engage's context
	// ending disengages that cluster), then returns nil. An error ends the
	// Fleet's Run with it: return one only for what no retry can fix.
	Run(ctx context.Context, e Engager) error
}

// Engager is what a Provider engages clusters with: the Fleet.
type Engager interface {
	// Engage starts working on the cluster name, reached through conn,
	// until ctx ends or the cluster is engaged again (a rotated
	// credential): its informers are built, started and watched by every
	// controller of the Fleet. It returns once the cluster is engaged, not
	// synced: an unreachable cluster is retried in the background and named
	// by Fleet.ReadyNote. Bad input (an empty name or one with a '/', a
	// Connection with neither Config nor Client) is an error matching
	// ErrInvalidOptions.
	Engage(ctx context.Context, name string, conn Connection) error
}

// Connection is how a Fleet reaches one cluster: a rest.Config, from which
// it builds the clients, or clients built already (a fake cluster's). Given
// both, the clients are used and Config is what Cluster.Config returns.
type Connection struct {
	Config   *rest.Config
	Client   kubernetes.Interface
	Dynamic  dynamic.Interface
	Metadata metadata.Interface
}

// List is a Provider of the clusters it is given: engaged when the Fleet
// runs, or at once when added later, and disengaged when removed. It is the
// static list of a fleet that changes only when its owner says so (a test,
// a command-line flag, a provider of one's own on top).
type List struct {
	mu       sync.Mutex
	clusters map[string]Connection
	cancels  map[string]context.CancelFunc // engaged ones
	engager  Engager
	ctx      context.Context // Run's; nil when not running
}

// NewList returns a List of clusters.
func NewList(clusters map[string]Connection) *List {
	return &List{clusters: maps.Clone(clusters), cancels: map[string]context.CancelFunc{}}
}

// Add adds (or replaces) the cluster name, engaging it at once when the
// List runs. The error is Engage's.
func (l *List) Add(name string, conn Connection) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.clusters == nil {
		l.clusters, l.cancels = map[string]Connection{}, map[string]context.CancelFunc{}
	}
	l.clusters[name] = conn
	if l.ctx == nil {
		return nil
	}
	return l.engage(name, conn)
}

// Remove removes the cluster name, disengaging it.
func (l *List) Remove(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.clusters, name)
	if cancel, ok := l.cancels[name]; ok {
		cancel()
		delete(l.cancels, name)
	}
}

// Names returns the clusters of the List, sorted.
func (l *List) Names() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Sorted(maps.Keys(l.clusters))
}

// Run engages every cluster of the List, then those added, until ctx ends.
func (l *List) Run(ctx context.Context, e Engager) error {
	l.mu.Lock()
	if l.ctx != nil {
		l.mu.Unlock()
		return fmt.Errorf("multicluster: %w: the List is already running", ErrInvalidOptions)
	}
	if l.cancels == nil {
		l.cancels = map[string]context.CancelFunc{}
	}
	l.ctx, l.engager = ctx, e
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(l.clusters)) {
		if err := l.engage(name, l.clusters[name]); err != nil {
			errs = append(errs, err)
		}
	}
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for name, cancel := range l.cancels {
			cancel()
			delete(l.cancels, name)
		}
		l.ctx, l.engager = nil, nil
	}()
	if len(errs) > 0 {
		// A cluster the List was given that cannot be engaged is the
		// caller's mistake (a bad name, no connection): say so at once.
		return errs[0]
	}
	<-ctx.Done()
	return nil
}

// engage is called with l.mu held.
func (l *List) engage(name string, conn Connection) error {
	if cancel, ok := l.cancels[name]; ok {
		cancel()
	}
	ctx, cancel := context.WithCancel(l.ctx)
	if err := l.engager.Engage(ctx, name, conn); err != nil {
		cancel()
		delete(l.cancels, name)
		return err
	}
	l.cancels[name] = cancel
	return nil
}

// KubeconfigFiles returns a List of clusters read from kubeconfig files, a
// cluster per entry of files (name → path), each at its file's current
// context. An unreadable file is an error naming it.
func KubeconfigFiles(files map[string]string) (*List, error) {
	clusters := make(map[string]Connection, len(files))
	for _, name := range slices.Sorted(maps.Keys(files)) {
		cfg, err := clientcmd.BuildConfigFromFlags("", files[name])
		if err != nil {
			return nil, fmt.Errorf("multicluster: cluster %q: kubeconfig %s: %w", name, files[name], err)
		}
		clusters[name] = Connection{Config: cfg}
	}
	return NewList(clusters), nil
}
