package manager

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
)

// stuckReconciler blocks in Reconcile, ignoring its context, until release
// is closed.
type stuckReconciler struct {
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func newStuckReconciler() *stuckReconciler {
	return &stuckReconciler{entered: make(chan struct{}), release: make(chan struct{})}
}

func (s *stuckReconciler) Reconcile(context.Context, controller.Key) (controller.Result, error) {
	s.once.Do(func() { close(s.entered) })
	<-s.release
	return controller.Result{}, nil
}

// stuckRunnable runs on every replica and ignores its context until release
// is closed.
type stuckRunnable struct {
	name    string
	entered chan struct{}
	release chan struct{}
}

func (s *stuckRunnable) Name() string             { return s.name }
func (s *stuckRunnable) NeedLeaderElection() bool { return false }
func (s *stuckRunnable) Run(context.Context) error {
	close(s.entered)
	<-s.release
	return nil
}

// waitFor fails t unless ch is closed within a generous deadline.
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// startAndCancel starts m, waits for ready, cancels ctx and returns Start's
// error.
func startAndCancel(t *testing.T, ctx context.Context, m *Manager, ready <-chan struct{}) error {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	waitFor(t, ready, "the Runnable to start")
	cancel()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("Start did not return within 20s of cancel")
		return nil
	}
}

// hasLog reports whether an entry with message msg was logged, with key=value
// among its parameters when key is not "".
func hasLog(logs ktesting.Underlier, msg, key string, value any) bool {
	for _, e := range logged(logs) {
		if e.Message != msg {
			continue
		}
		if key == "" {
			return true
		}
		for i := 0; i+1 < len(e.ParameterKVList); i += 2 {
			if e.ParameterKVList[i] == key && e.ParameterKVList[i+1] == value {
				return true
			}
		}
	}
	return false
}

// stuckTimeout is the graceful shutdown timeout of the tests with a stuck
// Runnable next to well-behaved ones: long enough for those to stop on a
// loaded machine, since only the stuck one may be named.
const stuckTimeout = 2 * time.Second

// A Reconcile that ignores its context holds up shutdown only until the
// graceful shutdown timeout: Start then names the controller, logs it as
// abandoned, stops everything else, and leaves the Lease to expire instead
// of releasing it under the still-running Reconcile.
func TestShutdownTimeoutAbandonsStuckLeaderController(t *testing.T) {
	client := fake.NewClientset(configMap("ns", "a"))
	m, err := New(Options{Client: client, LeaderElection: fastElection("one"), GracefulShutdownTimeout: stuckTimeout})
	require.NoError(t, err)
	stuck := newStuckReconciler()
	released := false
	release := func() {
		if !released {
			released = true
			close(stuck.release)
		}
	}
	t.Cleanup(release) // after a failed assertion, let the goroutines end
	var fine keyRecorder
	require.NoError(t, m.Add(
		configMapController(t, m.Factory(), "stuck", stuck, controller.Options[controller.Key]{}),
		configMapController(t, m.Factory(), "fine", &fine, controller.Options[controller.Key]{NeedLeaderElection: new(false)}),
	))
	cms, err := informer.For[*corev1.ConfigMap](m.Factory())
	require.NoError(t, err)
	ctx, logs := testLogger(t)

	err = startAndCancel(t, ctx, m, stuck.entered)
	require.ErrorIs(t, err, ErrShutdownTimeout)
	var ste *ShutdownTimeoutError
	require.ErrorAs(t, err, &ste)
	assert.Equal(t, []string{"stuck"}, ste.Runnables, "only the stuck controller is named")
	assert.Equal(t, stuckTimeout, ste.Timeout)
	assert.EqualError(t, err, `manager: graceful shutdown timeout exceeded: controllers "stuck" did not stop within 2s and were abandoned`)
	assert.True(t, hasLog(logs, "Abandoning a controller that did not stop within the graceful shutdown timeout", "controller", "stuck"))
	assert.False(t, hasLog(logs, "Abandoning a controller that did not stop within the graceful shutdown timeout", "controller", "fine"))
	assert.True(t, cms.Informer().IsStopped(), "the informers are stopped despite the stuck controller")

	// The elector stopped renewing and tried to release the Lease; it gave up
	// because the leader's work had not returned. The Lease still names this
	// replica and will expire.
	// (The release gives up before its first read, which client-go logs as a failed read.)
	require.Eventually(t, func() bool {
		for _, e := range logged(logs) {
			if e.Message == "error retrieving resource lock" && e.Err != nil && strings.Contains(e.Err.Error(), "OnStartedLeading has not returned") {
				return true
			}
		}
		return false
	}, 20*time.Second, 5*time.Millisecond)
	assert.Equal(t, "one", leaseHolder(t, client), "the lease was released under a running Reconcile")

	// Only the stuck controller's goroutines, and those waiting for it,
	// remain.
	goleak.VerifyNone(t,
		goleak.IgnoreAnyFunction("github.com/ctrlkit/ctrlkit/manager.(*stuckReconciler).Reconcile"),
		goleak.IgnoreAnyFunction("github.com/ctrlkit/ctrlkit/manager.(*Manager).goRunLocked.func1"),
		goleak.IgnoreAnyFunction("github.com/ctrlkit/ctrlkit/manager.(*Manager).waitForRunnables.func1"),
		goleak.IgnoreAnyFunction("github.com/ctrlkit/ctrlkit/manager.(*Manager).onStartedLeading"),
		goleak.IgnoreAnyFunction("github.com/ctrlkit/ctrlkit/manager.(*Manager).onStartedLeading.func1"),
		goleak.IgnoreAnyFunction("github.com/ctrlkit/ctrlkit/leaderelection.(*Elector).Run"),
		goleak.IgnoreAnyFunction("github.com/ctrlkit/ctrlkit/leaderelection.(*session).deliver"),
	)
	release()
	goleak.VerifyNone(t)
}

// A stuck Runnable that runs on every replica is named and abandoned too,
// but the leader's work stopped, so the Lease is released as usual.
func TestShutdownTimeoutStuckEveryReplicaRunnableReleasesLease(t *testing.T) {
	client := fake.NewClientset(configMap("ns", "a"))
	m, err := New(Options{Client: client, LeaderElection: fastElection("one"), GracefulShutdownTimeout: stuckTimeout})
	require.NoError(t, err)
	stuck := &stuckRunnable{name: "warmer", entered: make(chan struct{}), release: make(chan struct{})}
	released := false
	release := func() {
		if !released {
			released = true
			close(stuck.release)
		}
	}
	t.Cleanup(release)
	var rec keyRecorder
	leading := make(chan struct{})
	var once sync.Once
	r := controller.ReconcilerFunc[controller.Key](func(ctx context.Context, k controller.Key) (controller.Result, error) {
		once.Do(func() { close(leading) })
		return rec.Reconcile(ctx, k)
	})
	require.NoError(t, m.Add(stuck, configMapController(t, m.Factory(), "leader-only", r, controller.Options[controller.Key]{})))
	ctx, logs := testLogger(t)

	both := make(chan struct{})
	go func() {
		<-stuck.entered
		<-leading
		close(both)
	}()
	err = startAndCancel(t, ctx, m, both)
	require.ErrorIs(t, err, ErrShutdownTimeout)
	var ste *ShutdownTimeoutError
	require.ErrorAs(t, err, &ste)
	assert.Equal(t, []string{"warmer"}, ste.Runnables)
	assert.True(t, hasLog(logs, "Abandoning a controller that did not stop within the graceful shutdown timeout", "controller", "warmer"))
	assert.Equal(t, "", leaseHolder(t, client), "the lease is released: no leader work runs")
	release()
	goleak.VerifyNone(t)
}

// A fatal error and a stuck Runnable: Start's error matches both.
func TestShutdownTimeoutJoinsFatalError(t *testing.T) {
	m, err := New(Options{Client: fake.NewClientset(), GracefulShutdownTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	stuck := &stuckRunnable{name: "warmer", entered: make(chan struct{}), release: make(chan struct{})}
	defer close(stuck.release)
	require.NoError(t, m.Add(stuck, failingRunnable{"broken"}))
	ctx, _ := testLogger(t)
	err = m.Start(ctx)
	assert.ErrorIs(t, err, ErrShutdownTimeout)
	assert.ErrorContains(t, err, `controller "broken": port in use`)
	var ste *ShutdownTimeoutError
	require.ErrorAs(t, err, &ste)
	assert.Equal(t, []string{"warmer"}, ste.Runnables)
}

// Controllers that stop within the timeout: no error, the Lease released.
func TestShutdownWithinTimeoutReleasesLease(t *testing.T) {
	client := fake.NewClientset(configMap("ns", "a"))
	m, err := New(Options{Client: client, LeaderElection: fastElection("one"), GracefulShutdownTimeout: 10 * time.Second})
	require.NoError(t, err)
	inReconcile := make(chan struct{})
	var once sync.Once
	r := controller.ReconcilerFunc[controller.Key](func(ctx context.Context, _ controller.Key) (controller.Result, error) {
		once.Do(func() { close(inReconcile) })
		<-ctx.Done() // well-behaved: returns when told to
		return controller.Result{}, nil
	})
	require.NoError(t, m.Add(configMapController(t, m.Factory(), "polite", r, controller.Options[controller.Key]{})))
	ctx, logs := testLogger(t)
	require.NoError(t, startAndCancel(t, ctx, m, inReconcile))
	assert.Equal(t, "", leaseHolder(t, client))
	assert.False(t, hasLog(logs, "Abandoning a controller that did not stop within the graceful shutdown timeout", "", nil))
	goleak.VerifyNone(t)
}

func TestGracefulShutdownTimeoutDefaults(t *testing.T) {
	for _, tc := range []struct {
		opt, want time.Duration
	}{
		{0, defaultGracefulShutdownTimeout},
		{time.Second, time.Second},
		{-1, -1}, // no deadline
	} {
		m, err := New(Options{Client: fake.NewClientset(), GracefulShutdownTimeout: tc.opt})
		require.NoError(t, err)
		assert.Equal(t, tc.want, m.shutdownTimeout, "GracefulShutdownTimeout %v", tc.opt)
	}
	assert.True(t, errors.Is(&ShutdownTimeoutError{Runnables: []string{"x"}}, ErrShutdownTimeout))
}

// Leader work that does not stop within the graceful shutdown timeout of a
// lost Lease would act next to the new leader: the Manager then shuts down,
// naming it, instead of contending again.
func TestLostLeaseWithStuckLeaderWorkIsFatal(t *testing.T) {
	client := fake.NewClientset(configMap("ns", "a"))
	failRenewals := failingLeaseUpdates(client)
	m, err := New(Options{Client: client, LeaderElection: fastElection("one"), GracefulShutdownTimeout: stuckTimeout})
	require.NoError(t, err)
	stuck := newStuckReconciler()
	t.Cleanup(func() { close(stuck.release) })
	require.NoError(t, m.Add(configMapController(t, m.Factory(), "stuck", stuck, controller.Options[controller.Key]{})))
	ctx, _ := testLogger(t)
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	waitFor(t, stuck.entered, "the stuck Reconcile")
	failRenewals.Store(true)
	var got error
	select {
	case got = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Start did not return after the lost Lease's leader work outlived the timeout")
	}
	require.ErrorIs(t, got, ErrShutdownTimeout)
	assert.Contains(t, got.Error(), `lease kube-system/ctrlkit-test lost, and controllers "stuck" that need leader election did not stop within 1s`)
}

// causeRecorder blocks in Reconcile until release is closed or its context
// ends, and records the context's cause then (nil: still alive).
type causeRecorder struct {
	once    sync.Once
	entered chan struct{}
	release chan struct{}
	mu      sync.Mutex
	cause   []error
}

func newCauseRecorder(release chan struct{}) *causeRecorder {
	return &causeRecorder{entered: make(chan struct{}), release: release}
}

func (r *causeRecorder) Reconcile(ctx context.Context, _ controller.Key) (controller.Result, error) {
	r.once.Do(func() { close(r.entered) })
	select {
	case <-r.release:
	case <-ctx.Done():
	}
	r.mu.Lock()
	r.cause = append(r.cause, context.Cause(ctx))
	r.mu.Unlock()
	return controller.Result{}, nil
}

func (r *causeRecorder) causes() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.cause)
}

// SIGTERM under load: the Reconciles in flight when the Manager's context ends, the
// leader's and every replica's, keep their context and finish their writes (a status
// half written otherwise stays stale until the next leader gets to it). During an outage
// no write would land: they are cancelled at once, so the exit is not delayed.
func TestShutdownLetsTheReconcilesInFlightFinish(t *testing.T) {
	for name, outage := range map[string]bool{"API server answers": false, "during an outage": true} {
		t.Run(name, func(t *testing.T) {
			m, err := New(Options{Client: fake.NewClientset(configMap("ns", "a")), LeaderElection: fastElection("one")})
			require.NoError(t, err)
			release := make(chan struct{})
			leader, everywhere := newCauseRecorder(release), newCauseRecorder(release)
			require.NoError(t, m.Add(
				configMapController(t, m.Factory(), "leader", leader, controller.Options[controller.Key]{}),
				configMapController(t, m.Factory(), "everywhere", everywhere, controller.Options[controller.Key]{NeedLeaderElection: new(false)}),
			))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- m.Start(ctx) }()
			waitFor(t, leader.entered, "the leader's Reconcile")
			waitFor(t, everywhere.entered, "every replica's Reconcile")
			m.apiDown.Store(outage) // as the probe sets it
			cancel()
			if outage {
				require.NoError(t, <-done)
				for _, r := range []*causeRecorder{leader, everywhere} {
					require.Len(t, r.causes(), 1)
					assert.ErrorIs(t, r.causes()[0], errStopDuringOutage)
					assert.NotErrorIs(t, r.causes()[0], controller.ErrShutdown)
				}
				return
			}
			// Start waits for them; their contexts stay alive until they finish.
			select {
			case err := <-done:
				t.Fatalf("Start returned (%v) under the Reconciles in flight", err)
			case <-time.After(100 * time.Millisecond): // a sample of "not yet", not a wait for a state
			}
			assert.Empty(t, leader.causes())
			assert.Empty(t, everywhere.causes())
			close(release)
			require.NoError(t, <-done)
			assert.Equal(t, []error{nil}, leader.causes(), "the leader's write landed")
			assert.Equal(t, []error{nil}, everywhere.causes(), "every replica's write landed")
		})
	}
}
