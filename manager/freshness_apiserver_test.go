package manager_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/leaderelection"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// A standby whose watch is partitioned takes over the Lease with a cache that misses what the
// old leader wrote last. With controller.Options.Freshness.Gate its controller starts no worker
// until the cache caught up, /readyz stays ok and says what it waits for, and every Reconcile
// of the new leader sees the object the partition hid. Black box against kube-apiserver:
// Leases, consistent reads and the comparison with a consistent list are the server's.
func TestFreshnessGateAcrossAFailoverAPIServer(t *testing.T) {
	env := testkit.NewAPIServer(t)
	cl := newCluster(t, env)
	a := newGatedReplica(t, cl, "a", nil, nil)
	partition := &watchPartition{}
	b := newGatedReplica(t, cl, "b", partition, nil)

	a.start(t)
	waitUntil(t, apiWait, a.mgr.Elector().IsLeader, "replica a acquires the lease")
	b.start(t)
	before := createConfigMaps(t, cl, "before", 3)
	waitUntil(t, apiWait, func() bool { return a.rec.sawAll(before) }, "a reconciles every ConfigMap")
	waitUntil(t, apiWait, func() bool { return b.mgr.Elector().Leader() == a.id }, "b observes a as the leader")
	waitUntil(t, apiWait, func() bool { code, _ := probe(b.mgr.ReadyzHandler()); return code == http.StatusOK }, "b is ready (its caches synced)")

	partition.cut() // b's watches deliver nothing from now on; its lists and its Lease still work
	hidden := createConfigMaps(t, cl, "hidden", 1)[0]
	waitUntil(t, apiWait, func() bool { return a.rec.sawAll([]string{hidden}) }, "a reconciles the ConfigMap b's watch misses")
	require.NoError(t, a.stop())
	waitUntil(t, apiWait, b.mgr.Elector().IsLeader, "b takes over the released Lease")

	var body string
	waitUntil(t, apiWait, func() bool {
		var code int
		code, body = probeURL(b.mgr.ReadyzHandler(), "/readyz?verbose")
		return code == http.StatusOK && strings.Contains(body, "[+]synced ok, but: controller gated: the workers wait for informer configmaps")
	}, "b's /readyz?verbose names the informer its gate waits for, and b stays ready")
	assert.Zero(t, b.rec.total(), "b reconciled on a cache that misses %s", hidden)

	partition.heal()
	waitUntil(t, apiWait, func() bool { return b.rec.sawAll(append(before, hidden)) }, "b reconciles every ConfigMap once its cache caught up")
	assert.Empty(t, b.rec.blind(), "Reconciles of b that did not see %s", hidden)
	_, body = probeURL(b.mgr.ReadyzHandler(), "/readyz?verbose")
	assert.Contains(t, body, "[+]synced ok\n")
	require.NoError(t, b.stop())
}

// A leader whose Lease requests fail loses the Lease, keeps running as a standby and wins the
// Lease back once they succeed again; if its watch was cut meanwhile, its cache misses what the
// leader of the term in between wrote. The gate is taken again for every term, so the process
// that wins its own Lease back waits for its cache as a new leader would, and /readyz says so.
// Black box against kube-apiserver.
func TestFreshnessGateWhenALeaseIsWonBackAPIServer(t *testing.T) {
	env := testkit.NewAPIServer(t)
	cl := newCluster(t, env)
	partition := &watchPartition{}
	leases := &leaseCut{}
	a := newGatedReplica(t, cl, "a", partition, leases)
	b := newGatedReplica(t, cl, "b", nil, nil)

	a.start(t)
	waitUntil(t, apiWait, a.mgr.Elector().IsLeader, "replica a acquires the lease")
	b.start(t)
	before := createConfigMaps(t, cl, "before", 3)
	waitUntil(t, apiWait, func() bool { return a.rec.sawAll(before) }, "a reconciles every ConfigMap")

	partition.cut()
	leases.cut.Store(true) // a can neither renew its Lease nor hear of new objects
	waitUntil(t, apiWait, func() bool { return !a.mgr.Elector().IsLeader() }, "a loses the lease it cannot renew")
	waitUntil(t, apiWait, b.mgr.Elector().IsLeader, "b takes over the expired lease")
	hidden := createConfigMaps(t, cl, "hidden", 1)[0]
	waitUntil(t, apiWait, func() bool { return b.rec.sawAll([]string{hidden}) }, "b reconciles the ConfigMap a's watch misses")
	afterFirstTerm, blindBefore := a.rec.total(), len(a.rec.blind())

	leases.cut.Store(false)
	require.NoError(t, b.stop()) // released: a, still running, wins its Lease back
	waitUntil(t, apiWait, a.mgr.Elector().IsLeader, "a wins the lease back")
	waitUntil(t, apiWait, func() bool {
		code, body := probeURL(a.mgr.ReadyzHandler(), "/readyz?verbose")
		return code == http.StatusOK && strings.Contains(body, "controller gated: the workers wait for informer configmaps")
	}, "a's /readyz?verbose names the informer its gate waits for in its second term, and a stays ready")
	assert.Equal(t, afterFirstTerm, a.rec.total(), "a reconciled in its second term on a cache that misses %s", hidden)

	partition.heal()
	waitUntil(t, apiWait, func() bool { return a.rec.sawAll(append(before, hidden)) }, "a reconciles every ConfigMap once its cache caught up")
	assert.Greater(t, a.rec.total(), afterFirstTerm)
	assert.Len(t, a.rec.blind(), blindBefore, "a's second term reconciled without seeing %s", hidden)
	require.NoError(t, a.stop())
}

// leaseCut fails a client's requests for Leases while cut, as a partition between a leader and
// the API server's Lease endpoint would: the leader cannot renew.
type leaseCut struct{ cut atomic.Bool }

func (l *leaseCut) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if l.cut.Load() && strings.Contains(req.URL.Path, "/leases") {
			return nil, errors.New("injected: the Lease endpoint is unreachable")
		}
		return rt.RoundTrip(req)
	})
}

// gatedReplica is a replica (started and stopped as the leader election test's) whose one
// leader-only controller has Freshness.Gate, recording whether each Reconcile saw the
// "hidden-0" ConfigMap.
type gatedReplica struct {
	*replica
	rec *sightRecorder
}

func newGatedReplica(t *testing.T, cl *cluster, name string, p *watchPartition, l *leaseCut) *gatedReplica {
	t.Helper()
	cfg := rest.CopyConfig(cl.env.Config())
	if p != nil {
		cfg.Wrap(p.wrap)
	}
	if l != nil {
		cfg.Wrap(l.wrap)
	}
	client := newClient(t, cfg)
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2))).WithValues("replica", name)
	factory := informer.NewFactory(client, informer.Options{Namespace: cl.namespace, Logger: logger})
	mgr, err := manager.New(manager.Options{
		Client: client, Factory: factory, Logger: logger,
		LeaderElection: &leaderelection.Config{
			Enabled: true, Namespace: cl.namespace, Name: apiLeaseName, Identity: "replica-" + name,
			LeaseDuration: apiLeaseDuration, RenewDeadline: apiRenewDeadline, RetryPeriod: apiRetryPeriod,
			ReleaseOnCancel: true,
		},
	})
	require.NoError(t, err)
	cms, err := informer.For[*corev1.ConfigMap](factory)
	require.NoError(t, err)
	r := &gatedReplica{replica: &replica{id: "replica-" + name, mgr: mgr}, rec: &sightRecorder{lister: cms.Lister(), namespace: cl.namespace, seen: map[string]bool{}}}
	c, err := controller.New("gated", controller.Reconciler[controller.Key](r.rec), controller.Options[controller.Key]{Freshness: controller.Freshness{Gate: true}})
	require.NoError(t, err)
	require.NoError(t, controller.Watch(c, cms, controller.EnqueueObject))
	require.NoError(t, mgr.Add(c))
	return r
}

// sightRecorder records the ConfigMaps reconciled and the Reconciles that did not find
// "hidden-0" in the cache.
type sightRecorder struct {
	lister    informer.Lister[*corev1.ConfigMap]
	namespace string
	mu        sync.Mutex
	seen      map[string]bool
	missed    []string
	n         int
}

func (s *sightRecorder) Reconcile(_ context.Context, key controller.Key) (controller.Result, error) {
	_, err := s.lister.Namespace(s.namespace).Get("hidden-0")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	s.seen[key.Name] = true
	if err != nil {
		s.missed = append(s.missed, key.Name)
	}
	return controller.Result{}, nil
}

func (s *sightRecorder) sawAll(names []string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		if !s.seen[n] {
			return false
		}
	}
	return true
}

func (s *sightRecorder) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func (s *sightRecorder) blind() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.missed...)
}

// watchPartition holds what a client's watch streams receive while cut, as a partition that
// reaches the watch's connection and not the others does; heal delivers what was held.
type watchPartition struct {
	mu   sync.Mutex
	held chan struct{} // nil while healed; closed by heal
}

func (p *watchPartition) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		p.held = make(chan struct{})
	}
}

func (p *watchPartition) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held != nil {
		close(p.held)
		p.held = nil
	}
}

func (p *watchPartition) gate() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

func (p *watchPartition) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err != nil || req.URL.Query().Get("watch") != "true" {
			return resp, err
		}
		resp.Body = &partitionedBody{ReadCloser: resp.Body, p: p, closed: make(chan struct{})}
		return resp, nil
	})
}

// probeURL is probe of one URL.
func probeURL(h http.Handler, url string) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
	return rec.Code, rec.Body.String()
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// partitionedBody withholds what it read while the partition is cut, until it heals or the
// watch is closed.
type partitionedBody struct {
	io.ReadCloser
	p      *watchPartition
	once   sync.Once
	closed chan struct{}
}

func (b *partitionedBody) Read(buf []byte) (int, error) {
	n, err := b.ReadCloser.Read(buf)
	if g := b.p.gate(); g != nil {
		select {
		case <-g:
		case <-b.closed:
			return 0, io.EOF
		}
	}
	return n, err
}

func (b *partitionedBody) Close() error {
	b.once.Do(func() { close(b.closed) })
	return b.ReadCloser.Close()
}
