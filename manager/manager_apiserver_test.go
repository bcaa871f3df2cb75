package manager_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/leaderelection"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// Short election timings, so a handover takes seconds. They pass leaderelection's validation:
// 2s > 1.5s > 1.2×300ms, and the stored 2s exceeds RenewDeadline+RetryPeriod (1.8s).
const (
	apiLeaseDuration = 2 * time.Second
	apiRenewDeadline = 1500 * time.Millisecond
	apiRetryPeriod   = 300 * time.Millisecond

	apiLeaseName = "ctrlkit-manager-test"
	// apiWait bounds every wait on the server; generous, since the machine may be loaded.
	apiWait = 30 * time.Second
)

// Two Managers (replicas a and b) with leader election against a real kube-apiserver: only the
// leader runs the controller that needs election, both replicas run the other one (warm
// standby), the Lease on the server names the leader, and when the leader stops the standby
// takes over — at once when the Lease is released, after it expired when it is not.
func TestManagerLeaderElectionAPIServer(t *testing.T) {
	// A server of its own rather than the shared one: it stops when this test ends, taking its
	// processes' waiters and client connections with it, so the tests of this package that check
	// for leaked goroutines while the binary runs (goleak.VerifyNone) pass in any order.
	env := testkit.NewAPIServer(t)
	t.Run("ReleaseOnCancel", func(t *testing.T) { testHandoverWithRelease(t, env) })
	t.Run("LeaseExpiry", func(t *testing.T) { testHandoverByExpiry(t, env) })
	t.Run("ClientGoMetrics", func(t *testing.T) { testClientGoMetrics(t, env) })
	t.Run("LeaseAccess", func(t *testing.T) { testLeaseAccess(t, env) })
}

// With ReleaseOnCancel the leader empties the Lease on its way out, so the standby takes over
// on its next poll instead of a LeaseDuration later.
func testHandoverWithRelease(t *testing.T, env *testkit.Env) {
	s := startTwoReplicas(t, env, true)

	cancelled := time.Now()
	require.NoError(t, s.a.stop(), "replica a's Start after cancel")
	aReturned := s.a.returnedAt()
	bLeads := waitUntil(t, apiWait, s.b.mgr.Elector().IsLeader, "replica b takes over the released lease")

	lease := s.leases.until(t, func(r leaseRecord) bool { return r.holder == s.b.id }, "the Lease names b")
	timeline := s.leases.records()
	aLast, release, bFirst := handover(t, timeline, s.a.id, s.b.id)
	require.NotNil(t, release, "a released the Lease (an empty holder between a and b); timeline:\n%s", formatTimeline(timeline))
	released := bFirst.acquire.Sub(release.renew)
	sinceRenewal := bFirst.acquire.Sub(aLast.renew)
	t.Logf("handover with ReleaseOnCancel: Lease released -> acquired by b %v (a's last renewal -> b %v); "+
		"wall clock: a's Start returned -> b leads %v, cancel -> b leads %v (a drained in %v)",
		released.Round(time.Millisecond), sinceRenewal.Round(time.Millisecond),
		bLeads.Sub(aReturned).Round(time.Millisecond), bLeads.Sub(cancelled).Round(time.Millisecond),
		aReturned.Sub(cancelled).Round(time.Millisecond))
	// b polls RetryPeriod to (1+JitterFactor)×RetryPeriod apart (660ms here), so it sees the
	// empty holder on its next poll; the slack covers a Get and a loaded machine, and the bound
	// stays below LeaseDuration, so a takeover by expiry would fail here.
	maxPoll := time.Duration((1 + leaderelection.JitterFactor) * float64(apiRetryPeriod))
	assert.LessOrEqual(t, released, maxPoll+400*time.Millisecond, "b acquires the released Lease on its next poll")
	assert.Less(t, sinceRenewal, apiLeaseDuration, "b did not wait for the lease to expire")
	assert.Equal(t, s.b.id, lease.holder)

	s.afterTakeover(t)

	require.NoError(t, s.b.stop())
	final := s.leases.until(t, func(r leaseRecord) bool { return r.holder == "" }, "b releases the Lease on its way out")
	assert.Empty(t, final.holder)
	assert.Equal(t, "", leaseHolderOf(t, s.cl))
}

// Without ReleaseOnCancel the Lease keeps naming the stopped leader, and the standby takes over
// only once the lease has expired: at least LeaseDuration after the old leader's last renewal,
// as the Lease's own timestamps show.
func testHandoverByExpiry(t *testing.T, env *testkit.Env) {
	s := startTwoReplicas(t, env, false)

	cancelled := time.Now()
	require.NoError(t, s.a.stop(), "replica a's Start after cancel")
	aReturned := s.a.returnedAt()
	assert.Equal(t, s.a.id, leaseHolderOf(t, s.cl), "without ReleaseOnCancel the Lease still names a after it stopped")
	bLeads := waitUntil(t, apiWait, s.b.mgr.Elector().IsLeader, "replica b takes over the expired lease")

	lease := s.leases.until(t, func(r leaseRecord) bool { return r.holder == s.b.id }, "the Lease names b")
	timeline := s.leases.records()
	aLast, release, bFirst := handover(t, timeline, s.a.id, s.b.id)
	require.Nil(t, release, "a did not release the Lease; timeline:\n%s", formatTimeline(timeline))
	sinceRenewal := bFirst.acquire.Sub(aLast.renew)
	t.Logf("handover by expiry (LeaseDuration %v): a's last renewal -> acquired by b %v; "+
		"wall clock: a's Start returned -> b leads %v, cancel -> b leads %v (a drained in %v)",
		apiLeaseDuration, sinceRenewal.Round(time.Millisecond),
		bLeads.Sub(aReturned).Round(time.Millisecond), bLeads.Sub(cancelled).Round(time.Millisecond),
		aReturned.Sub(cancelled).Round(time.Millisecond))
	// Both stamps are written by the candidates themselves (same host, same clock): a's renew
	// time before its last update, b's acquire time when it decided the lease had expired.
	assert.GreaterOrEqual(t, sinceRenewal, apiLeaseDuration, "b took over before the lease expired")
	assert.Equal(t, s.b.id, lease.holder)
	assert.Equal(t, aLast.transitions+1, bFirst.transitions, "the takeover counts as one leader transition")

	s.afterTakeover(t)
	require.NoError(t, s.b.stop())
}

// twoReplicas is the setup both subtests share: replica a leads, b is its warm standby.
type twoReplicas struct {
	cl     *cluster
	leases *leaseWatch
	a, b   *replica
	before []string // ConfigMaps created while a led
}

// startTwoReplicas starts a, waits until it leads, starts b, creates ConfigMaps and checks the
// steady state: only a's leader-only controller reconciles, both replicas' other controllers
// do, the Lease names a, and both replicas are healthy and ready.
func startTwoReplicas(t *testing.T, env *testkit.Env, release bool) *twoReplicas {
	t.Helper()
	cl := newCluster(t, env)
	s := &twoReplicas{cl: cl, leases: watchLease(t, cl)}
	s.a = newReplica(t, cl, "a", release)
	s.b = newReplica(t, cl, "b", release)

	s.a.start(t)
	waitUntil(t, apiWait, s.a.mgr.Elector().IsLeader, "replica a acquires the lease")
	s.b.start(t)
	s.before = createConfigMaps(t, cl, "before", 3)

	waitUntil(t, apiWait, func() bool {
		return s.a.leaderOnly.sawAll(s.before) && s.a.everywhere.sawAll(s.before) && s.b.everywhere.sawAll(s.before)
	}, "a's controllers and b's every-replica controller reconcile every ConfigMap")
	// The standby polls the Lease: once it names a, b is known to be standing by, not racing.
	waitUntil(t, apiWait, func() bool { return s.b.mgr.Elector().Leader() == s.a.id }, "b observes a as the leader")
	for _, r := range []*replica{s.a, s.b} {
		waitUntil(t, apiWait, func() bool { code, _ := probe(r.mgr.ReadyzHandler()); return code == http.StatusOK },
			"replica "+r.id+" is ready (its caches synced)")
		code, body := probe(r.mgr.HealthzHandler())
		assert.Equal(t, http.StatusOK, code, "replica %s /healthz: %s", r.id, body)
	}

	assert.True(t, s.a.mgr.Elector().IsLeader())
	assert.False(t, s.b.mgr.Elector().IsLeader(), "two leaders")
	assert.Zero(t, s.b.leaderOnly.total(), "the standby reconciled in a controller that needs leader election")
	assert.Empty(t, s.b.leaderRun.intervals(), "the standby ran a controller that needs leader election")
	assert.Equal(t, s.a.id, leaseHolderOf(t, cl), "the Lease on the server names the leader")
	return s
}

// afterTakeover checks b as the new leader: its leader-only controller works off the
// ConfigMaps its warm queue holds and reconciles new ones, the Lease names it, it is healthy,
// and its leader-only controller started only after a's had stopped.
func (s *twoReplicas) afterTakeover(t *testing.T) {
	t.Helper()
	aLeaderCount := s.a.leaderOnly.total()
	after := createConfigMaps(t, s.cl, "after", 2)
	waitUntil(t, apiWait, func() bool {
		return s.b.leaderOnly.sawAll(s.before) && s.b.leaderOnly.sawAll(after) && s.b.everywhere.sawAll(after)
	}, "b's leader-only controller reconciles the old and the new ConfigMaps")
	assert.Equal(t, aLeaderCount, s.a.leaderOnly.total(), "the stopped replica reconciled after it stopped")
	assert.Equal(t, s.b.id, leaseHolderOf(t, s.cl))
	code, body := probe(s.b.mgr.HealthzHandler())
	assert.Equal(t, http.StatusOK, code, "new leader's /healthz: %s", body)
	code, body = probe(s.a.mgr.HealthzHandler())
	assert.Equal(t, http.StatusOK, code, "stopped replica's /healthz (its election ended with its ctx): %s", body)

	// No split brain: a's leader-only controller had returned before b's started.
	aRuns, bRuns := s.a.leaderRun.intervals(), s.b.leaderRun.intervals()
	require.Len(t, aRuns, 1, "a's leader-only controller ran once")
	require.Len(t, bRuns, 1, "b's leader-only controller ran once")
	require.False(t, aRuns[0].end.IsZero(), "a's leader-only controller returned")
	assert.True(t, bRuns[0].start.After(aRuns[0].end),
		"b's leader-only controller started at %v, before a's returned at %v", bRuns[0].start, aRuns[0].end)
}

// cluster is one subtest's part of the API server: its clients and a namespace of its own, so
// the subtests' Leases and ConfigMaps stay apart.
type cluster struct {
	env       *testkit.Env
	client    kubernetes.Interface
	namespace string
}

func newCluster(t *testing.T, env *testkit.Env) *cluster {
	t.Helper()
	ns, err := env.Client().CoreV1().Namespaces().Create(env.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "leader-election-"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return &cluster{env: env, client: env.Client(), namespace: ns.Name}
}

// newClient is a clientset of cfg with an HTTP client of its own, whose idle keep-alive
// connections are closed when the test ends: they would otherwise live until the server stops.
func newClient(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	httpClient, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	t.Cleanup(httpClient.CloseIdleConnections)
	client, err := kubernetes.NewForConfigAndClient(cfg, httpClient)
	require.NoError(t, err)
	return client
}

// replica is one Manager with its own clientset, a controller that needs leader election and
// one that does not, both counting reconciles of the test namespace's ConfigMaps.
type replica struct {
	id         string
	mgr        *manager.Manager
	leaderOnly *reconcileCounter
	everywhere *reconcileCounter
	leaderRun  *timedRunnable

	cancel   context.CancelFunc
	done     chan error
	stopOnce sync.Once
	stopErr  error
	mu       sync.Mutex
	returned time.Time // when Start returned
}

func newReplica(t *testing.T, cl *cluster, name string, release bool) *replica {
	t.Helper()
	client := newClient(t, cl.env.Config())

	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2))).WithValues("replica", name)
	factory := informer.NewFactory(client, informer.Options{Namespace: cl.namespace, Logger: logger})
	r := &replica{
		id:         "replica-" + name,
		leaderOnly: newReconcileCounter(),
		everywhere: newReconcileCounter(),
	}
	mgr, err := manager.New(manager.Options{
		Client:  client,
		Factory: factory,
		Logger:  logger,
		LeaderElection: &leaderelection.Config{
			Enabled:         true,
			Namespace:       cl.namespace,
			Name:            apiLeaseName,
			Identity:        "replica-" + name,
			LeaseDuration:   apiLeaseDuration,
			RenewDeadline:   apiRenewDeadline,
			RetryPeriod:     apiRetryPeriod,
			ReleaseOnCancel: release,
		},
	})
	require.NoError(t, err)
	r.mgr = mgr

	cms, err := informer.For[*corev1.ConfigMap](factory)
	require.NoError(t, err)
	leaderOnly, err := controller.New("count-leader-only", r.leaderOnly.reconciler(), controller.Options[controller.Key]{})
	require.NoError(t, err)
	require.NoError(t, controller.Watch(leaderOnly, cms, controller.EnqueueObject))
	everywhere, err := controller.New("count-every-replica", r.everywhere.reconciler(),
		controller.Options[controller.Key]{NeedLeaderElection: new(false)})
	require.NoError(t, err)
	require.NoError(t, controller.Watch(everywhere, cms, controller.EnqueueObject))
	require.True(t, leaderOnly.NeedLeaderElection())
	require.False(t, everywhere.NeedLeaderElection())

	r.leaderRun = &timedRunnable{Controller: leaderOnly}
	require.NoError(t, mgr.Add(r.leaderRun, everywhere))
	return r
}

// start runs the Manager until stop (or the test's end: stop is also a cleanup).
func (r *replica) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan error, 1)
	go func() {
		err := r.mgr.Start(ctx)
		r.mu.Lock()
		r.returned = time.Now()
		r.mu.Unlock()
		r.done <- err
	}()
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Errorf("replica %s: %v", r.id, err)
		}
	})
}

// stop cancels the Manager and returns Start's result.
func (r *replica) stop() error {
	r.stopOnce.Do(func() {
		r.cancel()
		select {
		case r.stopErr = <-r.done:
		case <-time.After(apiWait):
			r.stopErr = fmt.Errorf("manager Start did not return within %v of cancel", apiWait)
		}
	})
	return r.stopErr
}

func (r *replica) returnedAt() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.returned
}

// reconcileCounter counts reconciles per ConfigMap name.
type reconcileCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func newReconcileCounter() *reconcileCounter { return &reconcileCounter{counts: map[string]int{}} }

func (c *reconcileCounter) reconciler() controller.Reconciler[controller.Key] {
	return controller.ReconcilerFunc[controller.Key](func(_ context.Context, key controller.Key) (controller.Result, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.counts[key.Name]++
		return controller.Result{}, nil
	})
}

func (c *reconcileCounter) sawAll(names []string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range names {
		if c.counts[n] == 0 {
			return false
		}
	}
	return true
}

func (c *reconcileCounter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.counts {
		n += v
	}
	return n
}

// timedRunnable records when the controller's Run starts and returns. Embedding the
// *Controller keeps everything else the Manager uses of it (HasSynced, its queue's shutdown
// for a standby that never ran it, default metrics).
type timedRunnable struct {
	*controller.Controller[controller.Key]

	mu   sync.Mutex
	runs []interval
}

type interval struct{ start, end time.Time }

func (r *timedRunnable) Run(ctx context.Context) error {
	r.mu.Lock()
	i := len(r.runs)
	r.runs = append(r.runs, interval{start: time.Now()})
	r.mu.Unlock()
	err := r.Controller.Run(ctx)
	r.mu.Lock()
	r.runs[i].end = time.Now()
	r.mu.Unlock()
	return err
}

func (r *timedRunnable) intervals() []interval {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.runs)
}

// leaseRecord is one version of the Lease as the server stored it.
type leaseRecord struct {
	holder          string
	acquire, renew  time.Time
	durationSeconds int32
	transitions     int32
	resourceVersion string
}

func (r leaseRecord) String() string {
	return fmt.Sprintf("rv=%s holder=%q acquire=%s renew=%s duration=%ds transitions=%d", r.resourceVersion, r.holder,
		r.acquire.Format("15:04:05.000000"), r.renew.Format("15:04:05.000000"), r.durationSeconds, r.transitions)
}

func recordOf(l *coordinationv1.Lease) leaseRecord {
	r := leaseRecord{resourceVersion: l.ResourceVersion}
	if h := l.Spec.HolderIdentity; h != nil {
		r.holder = *h
	}
	if at := l.Spec.AcquireTime; at != nil {
		r.acquire = at.Time
	}
	if rt := l.Spec.RenewTime; rt != nil {
		r.renew = rt.Time
	}
	if d := l.Spec.LeaseDurationSeconds; d != nil {
		r.durationSeconds = *d
	}
	if n := l.Spec.LeaseTransitions; n != nil {
		r.transitions = *n
	}
	return r
}

// leaseWatch records every version of the test's Lease through a watch on the server, so the
// handover is read from the server's own history rather than from the candidates.
type leaseWatch struct {
	mu      sync.Mutex
	recs    []leaseRecord
	closed  bool // the watch ended
	problem error
}

func watchLease(t *testing.T, cl *cluster) *leaseWatch {
	t.Helper()
	leases := cl.client.CoordinationV1().Leases(cl.namespace)
	sel := fields.OneTermEqualSelector("metadata.name", apiLeaseName).String()
	list, err := leases.List(t.Context(), metav1.ListOptions{FieldSelector: sel})
	require.NoError(t, err)
	require.Empty(t, list.Items, "a fresh namespace has no Lease")
	w, err := leases.Watch(t.Context(), metav1.ListOptions{FieldSelector: sel, ResourceVersion: list.ResourceVersion})
	require.NoError(t, err)
	lw := &leaseWatch{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			lw.mu.Lock()
			switch l, ok := ev.Object.(*coordinationv1.Lease); {
			case ok && (ev.Type == watch.Added || ev.Type == watch.Modified):
				lw.recs = append(lw.recs, recordOf(l))
			case ev.Type == watch.Error:
				lw.problem = fmt.Errorf("lease watch error: %v", ev.Object)
			}
			lw.mu.Unlock()
		}
		lw.mu.Lock()
		lw.closed = true
		lw.mu.Unlock()
	}()
	t.Cleanup(func() {
		w.Stop()
		<-done
	})
	return lw
}

func (lw *leaseWatch) records() []leaseRecord {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return slices.Clone(lw.recs)
}

// until waits for the latest recorded version of the Lease to satisfy ok and returns it. It
// fails at once if the watch broke, since records would then be missing.
func (lw *leaseWatch) until(t *testing.T, ok func(leaseRecord) bool, what string) leaseRecord {
	t.Helper()
	var last leaseRecord
	var broken error
	waitUntil(t, apiWait, func() bool {
		lw.mu.Lock()
		defer lw.mu.Unlock()
		if lw.problem != nil || lw.closed {
			broken = errors.Join(lw.problem, errors.New("lease watch closed early"))
			return true
		}
		if len(lw.recs) == 0 {
			return false
		}
		last = lw.recs[len(lw.recs)-1]
		return ok(last)
	}, what)
	require.NoError(t, broken, "while waiting until %s", what)
	return last
}

// handover finds, in the Lease's history, from's last version before to first held it, the
// release in between (nil when none), and to's first version.
func handover(t *testing.T, recs []leaseRecord, from, to string) (fromLast leaseRecord, release *leaseRecord, toFirst leaseRecord) {
	t.Helper()
	first := slices.IndexFunc(recs, func(r leaseRecord) bool { return r.holder == to })
	require.GreaterOrEqual(t, first, 0, "%s never held the Lease; timeline:\n%s", to, formatTimeline(recs))
	last := -1
	for i := first - 1; i >= 0; i-- {
		if recs[i].holder == from {
			last = i
			break
		}
	}
	require.GreaterOrEqual(t, last, 0, "%s never held the Lease before %s; timeline:\n%s", from, to, formatTimeline(recs))
	for i := last + 1; i < first; i++ {
		require.Empty(t, recs[i].holder, "only a release may come between %s and %s; timeline:\n%s", from, to, formatTimeline(recs))
		release = &recs[i]
	}
	for _, r := range recs[:first] {
		require.NotEqual(t, to, r.holder)
		require.Contains(t, []string{from, ""}, r.holder, "unexpected holder; timeline:\n%s", formatTimeline(recs))
	}
	return recs[last], release, recs[first]
}

func formatTimeline(recs []leaseRecord) string {
	var out string
	for _, r := range recs {
		out += "  " + r.String() + "\n"
	}
	return out
}

// waitUntil polls cond every few milliseconds until it holds (returning when it was seen to) or
// timeout passes (failing the test with what).
func waitUntil(t *testing.T, timeout time.Duration, cond func() bool, what string) time.Time {
	t.Helper()
	var at time.Time
	err := wait.PollUntilContextTimeout(context.Background(), 2*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if cond() {
			at = time.Now()
			return true, nil
		}
		return false, nil
	})
	require.NoError(t, err, "waiting %v until %s", timeout, what)
	return at
}

func createConfigMaps(t *testing.T, cl *cluster, prefix string, n int) []string {
	t.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
		_, err := cl.client.CoreV1().ConfigMaps(cl.namespace).Create(t.Context(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: names[i]},
			Data:       map[string]string{"n": fmt.Sprint(i)},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	return names
}

// leaseHolderOf reads the Lease's holderIdentity from the server ("" when released).
func leaseHolderOf(t *testing.T, cl *cluster) string {
	t.Helper()
	l, err := cl.client.CoordinationV1().Leases(cl.namespace).Get(t.Context(), apiLeaseName, metav1.GetOptions{})
	require.NoError(t, err)
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// probe serves one GET through h and returns the status code and body.
func probe(h http.Handler) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	return rec.Code, rec.Body.String()
}
