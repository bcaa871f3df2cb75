package manager

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/rest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/featuregate"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/leaderelection"
)

func configMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1"}}
}

// startManager runs m.Start in a goroutine; stop cancels it and returns
// Start's error.
func startManager(t *testing.T, ctx context.Context, m *Manager) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	var (
		once sync.Once
		err  error
	)
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				err = errors.New("Start did not return within 20s of cancel")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// get fetches path from h and returns the status code and body.
func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

// configMapController reconciles ConfigMaps into rec.
func configMapController(t *testing.T, f *informer.Factory, name string, rec controller.Reconciler[controller.Key], opts controller.Options[controller.Key]) *controller.Controller[controller.Key] {
	t.Helper()
	c, err := controller.New(name, rec, opts)
	require.NoError(t, err)
	cms, err := informer.For[*corev1.ConfigMap](f)
	require.NoError(t, err)
	require.NoError(t, controller.Watch(c, cms, controller.EnqueueObject))
	return c
}

// Without Client or Config the Manager loads the kubeconfig as kubectl does;
// with none to find, New says where it looked. With a Config it builds its
// own clientset.
func TestNewManagerLoadsTheKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	_, err := New(Options{})
	require.Error(t, err)
	assert.ErrorContains(t, err, "manager: no Client or Config: load kubeconfig (KUBECONFIG, ~/.kube/config or in-cluster)")

	kubeconfig := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://example.invalid:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))
	t.Setenv("KUBECONFIG", kubeconfig)
	cfg, err := GetConfig()
	require.NoError(t, err)
	assert.Equal(t, "https://example.invalid:6443", cfg.Host)
	m, err := New(Options{})
	require.NoError(t, err)
	assert.NotNil(t, m.Client())

	m, err = New(Options{Config: &rest.Config{Host: "https://example.invalid:6443"}})
	require.NoError(t, err)
	assert.NotNil(t, m.Client())
}

func TestNewManagerRejectsBadOptions(t *testing.T) {
	client := fake.NewClientset()
	_, err := New(Options{Client: client, Config: &rest.Config{Host: "https://127.0.0.1:1"}})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	assert.NotErrorIs(t, err, controller.ErrInvalidOptions, "the Manager's options have an error of their own")
	assert.ErrorContains(t, err, "manager.Options.Config")

	_, err = New(Options{Client: client, CacheSyncTimeout: -1})
	assert.ErrorIs(t, err, ErrInvalidOptions)

	_, err = New(Options{Client: client, Factory: informer.NewFactory(client, informer.Options{}), Cache: informer.Options{Namespace: "a"}})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	assert.ErrorContains(t, err, "manager.Options.Cache")

	_, err = New(Options{Client: client, Registerer: onlyRegisterer{prometheus.NewRegistry()}})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	assert.ErrorContains(t, err, "Gatherer")

	reg := prometheus.NewRegistry()
	_, err = New(Options{Client: client, Registerer: reg})
	require.NoError(t, err)
	_, err = New(Options{Client: client, Registerer: reg})
	assert.ErrorContains(t, err, "already registered", "two Managers on one registry would report the same series")

	_, err = New(Options{Client: client, LeaderElection: &leaderelection.Config{Enabled: true}})
	assert.ErrorIs(t, err, leaderelection.ErrInvalidConfig)
	_, err = New(Options{Client: client, LeaderElection: &leaderelection.Config{Enabled: false}})
	assert.NoError(t, err, "a disabled election is not validated")
}

type onlyRegisterer struct{ prometheus.Registerer }

func TestManagerAdd(t *testing.T) {
	m, err := New(Options{Client: fake.NewClientset()})
	require.NoError(t, err)
	mk := func(name string, opts controller.Options[controller.Key]) *controller.Controller[controller.Key] {
		c, err := controller.New(name, controller.Reconciler[controller.Key](&keyRecorder{}), opts)
		require.NoError(t, err)
		return c
	}
	require.NoError(t, m.Add(mk("a", controller.Options[controller.Key]{}), mk("b", controller.Options[controller.Key]{})))
	err = m.Add(mk("a", controller.Options[controller.Key]{}))
	assert.ErrorIs(t, err, ErrDuplicateName)
	assert.ErrorContains(t, err, `"a"`)
	assert.ErrorIs(t, m.Add(mk("c", controller.Options[controller.Key]{}), mk("c", controller.Options[controller.Key]{})), ErrDuplicateName)
	assert.ErrorIs(t, m.Add(nil), ErrInvalidOptions)
	err = m.Add(mk("gated", controller.Options[controller.Key]{Feature: "Fancy"}))
	assert.ErrorIs(t, err, ErrInvalidOptions)
	assert.ErrorContains(t, err, "FeatureGate")

	// Names are unique per Manager, not per process.
	m2, err := New(Options{Client: fake.NewClientset()})
	require.NoError(t, err)
	require.NoError(t, m2.Add(mk("a", controller.Options[controller.Key]{})))
}

func TestGatedOffControllerNeverRuns(t *testing.T) {
	gate := featuregate.New()
	require.NoError(t, gate.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		"Fancy":  {Default: false, PreRelease: featuregate.Alpha},
		"Stable": {Default: true, PreRelease: featuregate.Beta},
	}))
	client := fake.NewClientset(configMap("ns", "a"), configMap("ns", "b"))
	m, err := New(Options{Client: client, FeatureGate: gate})
	require.NoError(t, err)
	var on, off, ungated keyRecorder
	require.NoError(t, m.Add(
		configMapController(t, m.Factory(), "fancy", &off, controller.Options[controller.Key]{Feature: "Fancy"}),
		configMapController(t, m.Factory(), "stable", &on, controller.Options[controller.Key]{Feature: "Stable"}),
		configMapController(t, m.Factory(), "plain", &ungated, controller.Options[controller.Key]{}),
	))
	ctx, logs := testLogger(t)
	stop := startManager(t, ctx, m)
	require.Eventually(t, func() bool {
		return on.Count(controller.Key{Namespace: "ns", Name: "a"}) == 1 && on.Count(controller.Key{Namespace: "ns", Name: "b"}) == 1 &&
			ungated.Count(controller.Key{Namespace: "ns", Name: "a"}) == 1 && ungated.Count(controller.Key{Namespace: "ns", Name: "b"}) == 1
	}, 10*time.Second, time.Millisecond)
	require.NoError(t, stop())
	assert.Empty(t, off.Keys(), "the gated-off controller reconciled")
	_, body := get(t, m.Handler(), "/metrics")
	assert.Contains(t, body, `kubernetes_feature_enabled{name="Fancy",stage="ALPHA"} 0`)
	assert.Contains(t, body, `kubernetes_feature_enabled{name="Stable",stage="BETA"} 1`)
	var said bool
	for _, e := range logged(logs) {
		if strings.Contains(e.Message, "feature gate is disabled") {
			said = true
			assert.Contains(t, fmt.Sprint(e.ParameterKVList), "fancy")
			assert.Contains(t, fmt.Sprint(e.ParameterKVList), "Fancy")
		}
	}
	assert.True(t, said, "the log says why the controller did not start")
}

func TestProbesAndMetrics(t *testing.T) {
	client := fake.NewClientset(configMap("ns", "a"))
	reg := prometheus.NewRegistry()
	m, err := New(Options{Client: client, Registerer: reg})
	require.NoError(t, err)
	var rec keyRecorder
	c := configMapController(t, m.Factory(), "configmaps", &rec, controller.Options[controller.Key]{})
	require.NoError(t, m.Add(c))
	h := m.Handler()

	code, body := get(t, h, "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code, "not ready before Start")
	assert.Contains(t, body, "not running")
	code, _ = get(t, h, "/healthz")
	assert.Equal(t, http.StatusOK, code)

	ctx, _ := testLogger(t)
	stop := startManager(t, ctx, m)
	require.Eventually(t, func() bool {
		code, _ := get(t, h, "/readyz")
		return code == http.StatusOK
	}, 10*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { return rec.Count(controller.Key{Namespace: "ns", Name: "a"}) == 1 }, 10*time.Second, time.Millisecond)
	waitIdle(t, c)
	code, body = get(t, h, "/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok", body)

	code, body = get(t, h, "/metrics")
	require.Equal(t, http.StatusOK, code)
	for _, series := range []string{
		`controller_runtime_reconcile_total{controller="configmaps",result="success"} 1`,
		`controller_runtime_reconcile_total{controller="configmaps",result="error"} 0`,
		`controller_runtime_reconcile_time_seconds_count{controller="configmaps"} 1`,
		`controller_runtime_active_workers{controller="configmaps"} 0`,
		`controller_runtime_max_concurrent_reconciles{controller="configmaps"} 1`,
		`controller_runtime_reconcile_panics_total{controller="configmaps"} 0`,
		`workqueue_adds_total{controller="configmaps",name="configmaps"} 1`,
		`workqueue_depth{controller="configmaps",name="configmaps",priority="0"} 0`,
	} {
		assert.Contains(t, body, series)
	}
	require.NoError(t, stop())
	code, _ = get(t, h, "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code, "not ready after shutdown")

	// The global default registry was not touched.
	mfs, err := prometheus.DefaultGatherer.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		assert.NotContains(t, mf.GetName(), "ctrlkit_")
		assert.NotContains(t, mf.GetName(), "controller_runtime_")
	}
}

func TestManagerServesOnConfiguredAddresses(t *testing.T) {
	m, err := New(Options{Client: fake.NewClientset(), HealthProbeAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0"})
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	stop := startManager(t, ctx, m)
	require.Eventually(t, func() bool { return m.HealthProbeAddr() != "" && m.MetricsAddr() != "" }, 10*time.Second, time.Millisecond)
	assert.NotEqual(t, m.HealthProbeAddr(), m.MetricsAddr())
	fetch := func(addr, path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	require.Eventually(t, func() bool {
		code, _ := fetch(m.HealthProbeAddr(), "/readyz")
		return code == http.StatusOK
	}, 10*time.Second, time.Millisecond)
	code, _ := fetch(m.HealthProbeAddr(), "/metrics")
	assert.Equal(t, http.StatusNotFound, code, "metrics are on their own address")
	code, body := fetch(m.MetricsAddr(), "/metrics")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "go_goroutines", "the private default registry has the Go collector")
	require.NoError(t, stop())
	assert.Empty(t, m.HealthProbeAddr(), "servers are closed")

	// A busy address is a clear error from Start.
	m2, err := New(Options{Client: fake.NewClientset(), HealthProbeAddr: "256.0.0.1:1"})
	require.NoError(t, err)
	err = m2.Start(ctx)
	assert.ErrorContains(t, err, `serving health on "256.0.0.1:1"`)
}

// failingLeaseUpdates makes every Lease update on client fail once the returned flag is set:
// the leader cannot renew, as with etcd unavailable.
func failingLeaseUpdates(client *fake.Clientset) *atomic.Bool {
	var fail atomic.Bool
	client.PrependReactor("update", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		if fail.Load() {
			return true, nil, errors.New("injected: etcd unavailable")
		}
		return false, nil, nil
	})
	return &fail
}

func fastElection(id string) *leaderelection.Config {
	return &leaderelection.Config{
		Enabled: true, Namespace: "kube-system", Name: "ctrlkit-test", Identity: id,
		LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 50 * time.Millisecond,
		ReleaseOnCancel: true,
	}
}

func leaseHolder(t *testing.T, client kubernetes.Interface) string {
	t.Helper()
	l, err := client.CoordinationV1().Leases("kube-system").Get(context.Background(), "ctrlkit-test", metav1.GetOptions{})
	if err != nil {
		return ""
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// orderRecorder wraps a Runnable and records, when its Run returns, what the
// rest of the system looked like.
type orderRecorder struct {
	Runnable
	after func()
}

func (o orderRecorder) Run(ctx context.Context) error {
	err := o.Runnable.Run(ctx)
	o.after()
	return err
}

// Shutdown goes: controllers drained, then informers stopped, then the lease
// released; and nothing is left running.
func TestManagerShutdownOrder(t *testing.T) {
	client := fake.NewClientset(configMap("ns", "a"))
	m, err := New(Options{Client: client, LeaderElection: fastElection("one")})
	require.NoError(t, err)
	inReconcile := make(chan struct{})
	var reconcileFinished atomic.Bool
	r := controller.ReconcilerFunc[controller.Key](func(ctx context.Context, k controller.Key) (controller.Result, error) {
		close(inReconcile)
		<-ctx.Done()
		reconcileFinished.Store(true)
		return controller.Result{}, nil
	})
	c := configMapController(t, m.Factory(), "slow", r, controller.Options[controller.Key]{})
	cms, err := informer.For[*corev1.ConfigMap](m.Factory())
	require.NoError(t, err)
	type snapshot struct {
		reconcileFinished, informerStopped bool
		holder                             string
	}
	var atControllerExit snapshot
	require.NoError(t, m.Add(orderRecorder{Runnable: c, after: func() {
		atControllerExit = snapshot{reconcileFinished.Load(), cms.Informer().IsStopped(), leaseHolder(t, client)}
	}}))
	ctx, _ := testLogger(t)
	stop := startManager(t, ctx, m)
	<-inReconcile
	assert.True(t, m.Elector().IsLeader())
	require.NoError(t, stop())

	assert.Equal(t, snapshot{reconcileFinished: true, informerStopped: false, holder: "one"}, atControllerExit,
		"when the controller returned, its Reconcile had finished, informers still ran and the lease was still held")
	assert.True(t, cms.Informer().IsStopped(), "informers are stopped by Start's return")
	assert.Equal(t, "", leaseHolder(t, client), "the lease is released by Start's return")
	goleak.VerifyNone(t)
}

// Two replicas: only the leader runs controllers that need leader election;
// the standby runs the others and keeps its caches (and queues) warm, and
// takes over when the leader stops.
func TestLeaderElectionIntegration(t *testing.T) {
	client := fake.NewClientset(configMap("ns", "a"), configMap("ns", "b"))
	type replica struct {
		m               *Manager
		leader, anyRepl keyRecorder
	}
	newReplica := func(id string) *replica {
		rp := &replica{}
		m, err := New(Options{Client: client, LeaderElection: fastElection(id)})
		require.NoError(t, err)
		rp.m = m
		require.NoError(t, m.Add(
			configMapController(t, m.Factory(), "leader-only", &rp.leader, controller.Options[controller.Key]{}),
			configMapController(t, m.Factory(), "every-replica", &rp.anyRepl, controller.Options[controller.Key]{NeedLeaderElection: new(false)}),
		))
		return rp
	}
	a, b := newReplica("a"), newReplica("b")
	ctx, _ := testLogger(t)
	stopA := startManager(t, ctx, a.m)
	require.Eventually(t, a.m.Elector().IsLeader, 10*time.Second, time.Millisecond)
	stopB := startManager(t, ctx, b.m)

	both := func(r *keyRecorder) func() bool {
		return func() bool {
			return r.Count(controller.Key{Namespace: "ns", Name: "a"}) >= 1 && r.Count(controller.Key{Namespace: "ns", Name: "b"}) >= 1
		}
	}
	require.Eventually(t, both(&a.leader), 10*time.Second, time.Millisecond)
	require.Eventually(t, both(&a.anyRepl), 10*time.Second, time.Millisecond)
	require.Eventually(t, both(&b.anyRepl), 10*time.Second, time.Millisecond, "the standby's non-leader controller runs")
	require.Eventually(t, func() bool {
		code, _ := get(t, b.m.Handler(), "/readyz")
		return code == http.StatusOK
	}, 10*time.Second, time.Millisecond, "the standby is ready: its caches synced")
	assert.False(t, b.m.Elector().IsLeader())
	assert.Empty(t, b.leader.Keys(), "the standby ran a controller that needs leader election")
	assert.Equal(t, "a", leaseHolder(t, client))

	// The leader stops (releasing the lease); the standby takes over and
	// works off the keys its warm queue collected.
	require.NoError(t, stopA())
	require.Eventually(t, b.m.Elector().IsLeader, 10*time.Second, time.Millisecond)
	require.Eventually(t, both(&b.leader), 10*time.Second, time.Millisecond)
	assert.Equal(t, "b", leaseHolder(t, client))
	require.NoError(t, stopB())
}

// With ExitOnLeaseLoss, a lost lease stops the controllers that need it and
// makes Start return ErrLeaseLost instead of exiting the process.
func TestLostLeaseIsFatalWithExitOnLeaseLoss(t *testing.T) {
	client := fake.NewClientset(configMap("ns", "a"))
	failRenewals := failingLeaseUpdates(client)
	le := fastElection("one")
	le.HealthTolerance = time.Millisecond
	m, err := New(Options{Client: client, LeaderElection: le, ExitOnLeaseLoss: true})
	require.NoError(t, err)
	var ctxEnded atomic.Bool
	var cause atomic.Pointer[error]
	started := make(chan struct{})
	r := controller.ReconcilerFunc[controller.Key](func(ctx context.Context, _ controller.Key) (controller.Result, error) {
		close(started)
		<-ctx.Done()
		c := context.Cause(ctx)
		cause.Store(&c)
		ctxEnded.Store(true)
		return controller.Result{}, nil
	})
	require.NoError(t, m.Add(configMapController(t, m.Factory(), "guarded", r, controller.Options[controller.Key]{})))
	ctx, _ := testLogger(t)
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	<-started
	failRenewals.Store(true)
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Start did not return after the lease was lost")
	}
	assert.ErrorIs(t, err, leaderelection.ErrLeaseLost)
	assert.True(t, ctxEnded.Load(), "the guarded Reconcile saw its context end")
	assert.NotErrorIs(t, *cause.Load(), controller.ErrShutdown, "a lost Lease cancels at once, with no drain: another replica may lead")

	// The Lease still names this replica but is no longer renewed: once it
	// is older than LeaseDuration plus the tolerance, /healthz fails so a
	// kubelet would restart the process.
	require.Eventually(t, func() bool {
		code, _ := get(t, m.HealthzHandler(), "/healthz")
		return code == http.StatusInternalServerError
	}, 10*time.Second, 10*time.Millisecond)
	_, body := get(t, m.HealthzHandler(), "/healthz")
	assert.Contains(t, body, "lease not renewed")
}

// By default a lost lease stops only the controllers that need it: the
// Manager keeps running (the controller that runs on every replica keeps
// working, /readyz and /healthz stay ok), contends again, and once it leads
// again runs the leader's controller as a fresh term.
func TestLostLeaseStepsDownAndLeadsAgain(t *testing.T) {
	client := fake.NewClientset(configMap("ns", "a"))
	failRenewals := failingLeaseUpdates(client)
	m, err := New(Options{Client: client, LeaderElection: fastElection("one")})
	require.NoError(t, err)
	var terms, ended atomic.Int32
	var anyRepl keyRecorder
	leader := controller.ReconcilerFunc[controller.Key](func(ctx context.Context, _ controller.Key) (controller.Result, error) {
		terms.Add(1)
		<-ctx.Done()
		ended.Add(1)
		return controller.Result{}, nil
	})
	require.NoError(t, m.Add(
		configMapController(t, m.Factory(), "guarded", leader, controller.Options[controller.Key]{}),
		configMapController(t, m.Factory(), "every-replica", &anyRepl, controller.Options[controller.Key]{NeedLeaderElection: new(false)}),
	))
	ctx, _ := testLogger(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Error("Start did not return after ctx ended")
		}
	}()
	require.Eventually(t, func() bool { return terms.Load() == 1 }, 10*time.Second, time.Millisecond)

	failRenewals.Store(true)
	require.Eventually(t, func() bool { return ended.Load() == 1 && !m.Elector().IsLeader() }, 20*time.Second, time.Millisecond,
		"the lost lease ended the guarded Reconcile's context")
	select {
	case err := <-done:
		t.Fatalf("Start returned after a lost lease: %v", err)
	default:
	}
	_, err = client.CoreV1().ConfigMaps("ns").Create(ctx, configMap("ns", "b"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return anyRepl.Count(controller.Key{Namespace: "ns", Name: "b"}) == 1 }, 10*time.Second, time.Millisecond,
		"the controller that needs no election keeps working")
	for _, path := range []string{"/readyz", "/healthz"} {
		code, body := get(t, m.Handler(), path)
		assert.Equal(t, http.StatusOK, code, "%s while not leading: %s", path, body)
	}

	// Added between terms, a controller that needs leader election waits for the next one.
	var late keyRecorder
	require.NoError(t, m.Add(configMapController(t, m.Factory(), "added-between-terms", &late, controller.Options[controller.Key]{})))

	failRenewals.Store(false)
	require.Eventually(t, func() bool { return m.Elector().IsLeader() && terms.Load() >= 2 }, 20*time.Second, time.Millisecond,
		"leading again runs the guarded controller again, over the cached objects")
	require.Eventually(t, func() bool { return late.Count(controller.Key{Namespace: "ns", Name: "a"}) == 1 }, 10*time.Second, time.Millisecond,
		"the controller added between terms runs in the new one")
}

func TestManagerCacheSyncTimeoutIsFatal(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("injected: forbidden")
	})
	m, err := New(Options{Client: client, CacheSyncTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	var rec keyRecorder
	require.NoError(t, m.Add(configMapController(t, m.Factory(), "never-synced", &rec, controller.Options[controller.Key]{})))
	ctx, _ := testLogger(t)
	err = m.Start(ctx)
	require.Error(t, err)
	assert.ErrorIs(t, err, informer.ErrCacheSyncTimeout)
	assert.ErrorContains(t, err, "configmaps")
	assert.Empty(t, rec.Keys())
}

// failingRunnable fails at once.
type failingRunnable struct{ name string }

func (f failingRunnable) Name() string                 { return f.name }
func (f failingRunnable) Run(context.Context) error    { return errors.New("port in use") }
func (f failingRunnable) NeedLeaderElection() bool     { return false }
func (f failingRunnable) Feature() featuregate.Feature { return "" }

func TestRunnableErrorIsFatal(t *testing.T) {
	client := fake.NewClientset(configMap("ns", "a"))
	m, err := New(Options{Client: client})
	require.NoError(t, err)
	var rec keyRecorder
	c := configMapController(t, m.Factory(), "fine", &rec, controller.Options[controller.Key]{})
	require.NoError(t, m.Add(c, failingRunnable{"broken"}))
	ctx, _ := testLogger(t)
	err = m.Start(ctx)
	require.Error(t, err)
	assert.ErrorContains(t, err, `controller "broken": port in use`)
	assert.ErrorIs(t, m.Start(ctx), ErrAlreadyStarted)
}

func TestEventRecorderFor(t *testing.T) {
	client := fake.NewClientset()
	m, err := New(Options{Client: client})
	require.NoError(t, err)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0", UID: "u1"}}
	rec := m.EventRecorderFor("replicaset")
	rec.Event(pod, corev1.EventTypeNormal, "TooEarly", "dropped: the manager is not running")

	ctx, _ := testLogger(t)
	stop := startManager(t, ctx, m)
	require.Eventually(t, func() bool { return m.running.Load() }, 10*time.Second, time.Millisecond)
	rec.Eventf(pod, corev1.EventTypeWarning, "FailedCreate", "creating %s failed", "web-1")
	var events *corev1.EventList
	require.Eventually(t, func() bool {
		events, err = client.CoreV1().Events("ns").List(ctx, metav1.ListOptions{})
		return err == nil && len(events.Items) > 0
	}, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, stop())
	require.Len(t, events.Items, 1)
	ev := events.Items[0]
	assert.Equal(t, "replicaset", ev.Source.Component)
	assert.Equal(t, "FailedCreate", ev.Reason)
	assert.Equal(t, "creating web-1 failed", ev.Message)
	assert.Equal(t, "web-0", ev.InvolvedObject.Name)
	goleak.VerifyNone(t)
}

// widget is a custom resource type for the undecodable-object test.
type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Size int32 `json:"size"`
	} `json:"spec"`
}

func (w *widget) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// The factory a Manager builds records an event on a custom resource it
// cannot decode, and the controller watching it never sees the object.
func TestManagerFactoryRecordsUndecodableObjects(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	broken := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"namespace": "ns", "name": "broken", "uid": "u1", "resourceVersion": "1"},
		"spec":     map[string]any{"size": "three"},
	}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "WidgetList"}, broken)
	client := fake.NewClientset()
	m, err := New(Options{Client: client, Cache: informer.Options{DynamicClient: dyn, ErrorHandler: func(context.Context, error) {}}})
	require.NoError(t, err)
	widgets, err := informer.ForResource[*widget](m.Factory(), gvr)
	require.NoError(t, err)
	var rec keyRecorder
	c, err := controller.New("widgets", &rec, controller.Options[controller.Key]{})
	require.NoError(t, err)
	require.NoError(t, controller.Watch(c, widgets, controller.EnqueueObject))
	require.NoError(t, m.Add(c))
	ctx, _ := testLogger(t)
	stop := startManager(t, ctx, m)

	var events *corev1.EventList
	require.Eventually(t, func() bool {
		events, err = client.CoreV1().Events("ns").List(ctx, metav1.ListOptions{})
		return err == nil && len(events.Items) > 0
	}, 10*time.Second, 5*time.Millisecond)
	waitIdle(t, c)
	require.NoError(t, stop())
	ev := events.Items[0]
	assert.Equal(t, informer.ReasonUndecodable, ev.Reason)
	assert.Equal(t, "broken", ev.InvolvedObject.Name)
	assert.Equal(t, "Widget", ev.InvolvedObject.Kind)
	assert.Equal(t, informerEventSource, ev.Source.Component)
	assert.Empty(t, rec.Keys(), "an undecodable object never reaches a queue")
}

// onceRunnable needs leader election, returns its ctx's error when stopped (a common idiom,
// not a failure) and cannot run twice.
type onceRunnable struct{ runs atomic.Int32 }

func (o *onceRunnable) Name() string { return "once" }
func (o *onceRunnable) Run(ctx context.Context) error {
	o.runs.Add(1)
	<-ctx.Done()
	return ctx.Err()
}

// A Runnable that needs leader election and is not a RestartableRunnable cannot be run again
// in a new term: a lost Lease is then fatal, naming it, as with ExitOnLeaseLoss. Its returning
// context.Canceled when stopped is not itself an error.
func TestLostLeaseIsFatalForARunnableThatRunsOnce(t *testing.T) {
	client := fake.NewClientset()
	failRenewals := failingLeaseUpdates(client)
	m, err := New(Options{Client: client, LeaderElection: fastElection("one")})
	require.NoError(t, err)
	once := &onceRunnable{}
	require.NoError(t, m.Add(once))
	ctx, _ := testLogger(t)
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	require.Eventually(t, func() bool { return once.runs.Load() == 1 }, 10*time.Second, time.Millisecond)
	failRenewals.Store(true)
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Start did not return after the lease was lost")
	}
	require.ErrorIs(t, err, leaderelection.ErrLeaseLost)
	assert.Contains(t, err.Error(), `not contending again: Runnables "once" need leader election and cannot run twice`)
	assert.NotContains(t, err.Error(), "context canceled")
	assert.EqualValues(t, 1, once.runs.Load())
}
