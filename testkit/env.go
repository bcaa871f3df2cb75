package testkit

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/clientgometrics"
	"github.com/ctrlkit/ctrlkit/testkit/internal/kubeserver"
)

// DefaultSyncTimeout bounds Sync: how long informer caches may take to fill before the test
// fails. A fake syncs in milliseconds; a real API server on a loaded machine can take seconds.
const DefaultSyncTimeout = 30 * time.Second

// Env is one test's cluster: clients, an informer factory on them and a context. Build it with
// NewAPIServer / SharedAPIServer (a real kube-apiserver and etcd), or NewFake (in memory,
// milliseconds), whose FakeEnv embeds an Env and adds the controls only a fake has (failures,
// delays, recorded actions). Code that works on either takes an *Env. Everything an Env starts
// is stopped in t.Cleanup.
//
// An Env's methods may be called from any goroutine, but those that fail the test (Sync,
// WaitForQuiet, ...) must be called from the test's goroutine, as t.Fatal must.
type Env struct {
	t      testing.TB
	ctx    context.Context
	cancel context.CancelFunc

	client    kubernetes.Interface
	dynamic   dynamic.Interface
	metadata  metadata.Interface
	config    *rest.Config // nil for a fake
	namespace string
	factory   *informer.Factory

	server *kubeserver.Server // nil for a fake

	runMu       sync.Mutex
	controllers []*running // RunController's, watched by WaitForQuiet
}

// newEnv fills the parts every Env shares: the test context (carrying a ktesting logger, so
// contextual log output lands in the test's log) and the informer factory on client.
func newEnv(t testing.TB, client kubernetes.Interface, dyn dynamic.Interface, meta metadata.Interface) *Env {
	// A Manager's first New installs client-go's metric hooks, which client-go reads without a
	// lock: a test running a binary in a goroutine next to requests of its own would race with
	// it. Installed here first, before any of the Env's requests, as a main builds its Manager
	// before anything else.
	clientgometrics.Install()
	logger := ktesting.NewLogger(t, ktesting.DefaultConfig)
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), logger))
	e := &Env{t: t, ctx: ctx, cancel: cancel, client: client, dynamic: dyn, metadata: meta}
	// Cached objects are read-only, and sharing makes a write to one a write to others: the
	// mutation detector fails the test, naming the object and field, every second and in a last
	// check (registered first, so it runs once everything has stopped).
	e.factory = informer.NewFactory(client, informer.Options{
		DynamicClient:    dyn,
		MetadataClient:   meta,
		Logger:           logger,
		MutationDetector: true,
		MutationReport:   func(err error) { t.Errorf("testkit: %v", err) },
	})
	t.Cleanup(func() {
		if err := e.factory.CheckMutations(); err != nil {
			t.Errorf("testkit: %v", err)
		}
	})
	// Registered before the rest so it runs after: controllers and informers stop before the
	// clients (and, for an API server, the processes) they use go away.
	t.Cleanup(e.shutdown)
	return e
}

// shutdown stops the controllers started with RunController, then the informers.
func (e *Env) shutdown() {
	e.stopControllers()
	e.cancel()
	e.factory.Shutdown()
}

// Client is the typed clientset: the fake cluster's (a kubernetes/fake Clientset) for NewFake, a
// real one for an API server Env.
func (e *Env) Client() kubernetes.Interface { return e.client }

// Dynamic is the dynamic client. Both clients see the same cluster, fake or real: a ConfigMap
// written through Client reads back through Dynamic, and custom resources are served through
// Dynamic.
func (e *Env) Dynamic() dynamic.Interface { return e.dynamic }

// Metadata is the metadata client (what informer.ForMetadata and metadata-only controllers use)
// on the same cluster: objects read back as metav1.PartialObjectMetadata.
func (e *Env) Metadata() metadata.Interface { return e.metadata }

// Config is the rest.Config that reaches the API server (a copy; change it freely), or nil for
// NewFake, which has no server.
func (e *Env) Config() *rest.Config {
	if e.config == nil {
		return nil
	}
	return rest.CopyConfig(e.config)
}

// Factory is the ctrlkit informer factory on Client (and Dynamic, for informer.ForResource, and
// Metadata, for informer.ForMetadata).
// It is already started: informers requested with informer.For after the Env was built start
// at once. Call Sync to wait for their caches.
func (e *Env) Factory() *informer.Factory { return e.factory }

// Context is cancelled when the test ends (before its cleanups run) and carries a logger that
// writes to the test's log, for klog.FromContext.
func (e *Env) Context() context.Context { return e.ctx }

// Namespace is a namespace for the test's objects: "default" for NewFake, a fresh namespace
// created for this Env on an API server (so tests sharing a server do not see each other).
func (e *Env) Namespace() string { return e.namespace }

// Sync starts informers requested since the factory was started (the factory does that on its
// own; Sync makes it explicit) and waits until every informer of Factory has synced, failing the
// test after DefaultSyncTimeout with the names of those that did not.
func (e *Env) Sync() {
	e.t.Helper()
	if err := e.SyncContext(e.ctx, DefaultSyncTimeout); err != nil {
		e.t.Fatalf("testkit: %v", err)
	}
}

// SyncContext is Sync returning the error instead of failing the test.
func (e *Env) SyncContext(ctx context.Context, timeout time.Duration) error {
	e.factory.Start(e.ctx)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return e.factory.WaitForCacheSync(ctx)
}
