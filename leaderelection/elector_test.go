package leaderelection

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
)

func newTestElector(t *testing.T, c *cluster, n *netem, cfg Config, rec *recorder) *Elector {
	t.Helper()
	e, err := NewElector(c.client(n), cfg, rec.callbacks())
	require.NoError(t, err)
	return e
}

func TestSingleCandidateAcquiresAndReleases(t *testing.T) {
	c := newCluster(0, 1)
	cfg := fastConfig("a")
	cfg.ReleaseOnCancel = true
	rec := newRecorder()
	e := newTestElector(t, c, &netem{}, cfg, rec)
	assert.False(t, e.IsLeader(), "before Run")
	assert.Empty(t, e.Leader(), "before Run")
	require.NoError(t, e.Check(httptest.NewRequest("GET", "/healthz", nil)), "before Run")

	r := start(e)
	leadCtx := waitFor(t, rec.started, 5*time.Second, "OnStartedLeading")
	waitForValue(t, rec.newLeaders, "a", 5*time.Second, "OnNewLeader(a)")
	assert.True(t, e.IsLeader())
	assert.Equal(t, "a", e.Leader())
	assert.NoError(t, e.Check(httptest.NewRequest("GET", "/healthz", nil)))
	lease, err := c.lease(context.Background(), "default", "ctrl")
	require.NoError(t, err)
	assert.Equal(t, "a", holderOf(lease))
	assert.Equal(t, int32(1), *lease.Spec.LeaseDurationSeconds)

	require.NoError(t, r.stop(t), "Run after its ctx ended")
	assert.Error(t, leadCtx.Err(), "OnStartedLeading's ctx after Run returned")
	assert.False(t, e.IsLeader())
	starts, stops := rec.counts()
	assert.Equal(t, 1, starts)
	assert.Equal(t, 1, stops)
	lease, err = c.lease(context.Background(), "default", "ctrl")
	require.NoError(t, err)
	assert.Empty(t, holderOf(lease), "ReleaseOnCancel empties the holder")
	assert.Empty(t, e.Leader(), "a released lease has no leader")
}

func TestStandbySeesLeader(t *testing.T) {
	c := newCluster(0, 2)
	recA, recB := newRecorder(), newRecorder()
	a := newTestElector(t, c, &netem{}, fastConfig("a"), recA)
	b := newTestElector(t, c, &netem{}, fastConfig("b"), recB)

	ra := start(a)
	defer ra.stop(t)
	waitFor(t, recA.started, 5*time.Second, "a to lead")
	rb := start(b)
	defer rb.stop(t)

	assert.Equal(t, "a", waitFor(t, recB.newLeaders, 5*time.Second, "b's OnNewLeader"))
	assert.Equal(t, "a", b.Leader())
	assert.False(t, b.IsLeader(), "b is a standby")
	assert.True(t, a.IsLeader())
	// A standby keeps polling; it must not take over a lease that is being renewed. Over
	// three lease durations, a takeover is allowed only if a really stopped renewing for a
	// LeaseDuration (a loaded machine can starve the whole process that long).
	timer := time.NewTimer(3 * time.Second)
	defer timer.Stop()
	select {
	case <-recB.started:
		t.Log("b took over; checking that a's lease had expired")
	case <-timer.C:
	}
	assertTakeoversJustified(t, c.log(), time.Second)
	assert.NoError(t, b.Check(httptest.NewRequest("GET", "/healthz", nil)), "a standby is healthy")
}

func TestRunReturnsErrLeaseLost(t *testing.T) {
	c := newCluster(0, 3)
	cfg := fastConfig("a")
	cfg.HealthTolerance = 50 * time.Millisecond
	n := &netem{}
	rec := newRecorder()
	e := newTestElector(t, c, n, cfg, rec)
	r := start(e)
	defer r.cancel()
	leadCtx := waitFor(t, rec.started, 5*time.Second, "OnStartedLeading")
	require.NoError(t, e.Check(httptest.NewRequest("GET", "/healthz", nil)), "a renewing leader is healthy")

	n.setPartitioned(true)
	err := waitFor(t, r.done, 5*time.Second, "Run to give up")
	require.ErrorIs(t, err, ErrLeaseLost)
	assert.Contains(t, err.Error(), "default/ctrl")
	assert.ErrorIs(t, leadCtx.Err(), context.Canceled, "OnStartedLeading's ctx once the lease is lost")
	assert.False(t, e.IsLeader())
	starts, stops := rec.counts()
	assert.Equal(t, 1, starts)
	assert.Equal(t, 1, stops)

	// The Lease still names "a" and nobody renews it: once LeaseDuration+HealthTolerance
	// has passed since the last renewal, the watchdog reports it.
	require.Eventually(t, func() bool {
		return errors.Is(e.Check(httptest.NewRequest("GET", "/healthz", nil)), ErrLeaseNotRenewed)
	}, 5*time.Second, 20*time.Millisecond)
}

func TestRunWaitsForOnStartedLeading(t *testing.T) {
	c := newCluster(0, 4)
	rec := newRecorder()
	unblock := make(chan struct{})
	var returned atomic.Bool
	rec.lead = func(ctx context.Context) {
		<-ctx.Done()
		<-unblock // guarded work that takes its time to stop
		returned.Store(true)
	}
	e := newTestElector(t, c, &netem{}, fastConfig("a"), rec)
	r := start(e)
	waitFor(t, rec.started, 5*time.Second, "OnStartedLeading")
	r.cancel()
	timer := time.NewTimer(300 * time.Millisecond)
	defer timer.Stop()
	select {
	case err := <-r.done:
		t.Fatalf("Run returned (%v) while OnStartedLeading was still running", err)
	case <-timer.C:
	}
	_, stops := rec.counts()
	assert.Zero(t, stops, "OnStoppedLeading must wait for OnStartedLeading")
	close(unblock)
	require.NoError(t, waitFor(t, r.done, 5*time.Second, "Run to return"))
	assert.True(t, returned.Load())
	_, stops = rec.counts()
	assert.Equal(t, 1, stops)
}

func TestOnStartedLeadingMayReturnEarly(t *testing.T) {
	c := newCluster(0, 5)
	rec := newRecorder()
	var leadCtx context.Context
	returned := make(chan struct{})
	rec.lead = func(ctx context.Context) { // starts work elsewhere and returns, as client-go allows
		leadCtx = ctx
		close(returned)
	}
	e := newTestElector(t, c, &netem{}, fastConfig("a"), rec)
	r := start(e)
	waitFor(t, returned, 5*time.Second, "OnStartedLeading to return")
	assert.True(t, e.IsLeader(), "leadership outlives a callback that returned")
	assert.NoError(t, leadCtx.Err(), "the leading ctx stays live after the callback returned")
	require.NoError(t, r.stop(t))
	assert.Error(t, leadCtx.Err())
}

// With ReleaseOnCancel, client-go releases a lost lease before it cancels the leading ctx;
// ctrlkit must cancel the ctx and wait for OnStartedLeading before the release is written.
func TestLostLeaseReleaseWaitsForOnStartedLeading(t *testing.T) {
	c := newCluster(0, 6)
	cfg := fastConfig("a")
	cfg.ReleaseOnCancel = true
	n := &netem{}
	rec := newRecorder()
	var stoppedAt atomic.Pointer[time.Time]
	rec.lead = func(ctx context.Context) {
		<-ctx.Done()
		now := time.Now()
		stoppedAt.Store(&now)
	}
	e := newTestElector(t, c, n, cfg, rec)
	r := start(e)
	defer r.cancel()
	waitFor(t, rec.started, 5*time.Second, "OnStartedLeading")
	// Renewals fail; the release (empty holder) gets through.
	n.setFailWrite(func(l *coordinationv1.Lease) bool { return holderOf(l) == "a" })

	require.ErrorIs(t, waitFor(t, r.done, 5*time.Second, "Run to give up"), ErrLeaseLost)
	log := c.log()
	release := log[len(log)-1]
	require.Empty(t, release.holder, "the last write releases the lease")
	require.NotNil(t, stoppedAt.Load())
	assert.True(t, stoppedAt.Load().Before(release.at),
		"OnStartedLeading returned at %v, after the release was written at %v", *stoppedAt.Load(), release.at)
	assert.NoError(t, e.Check(httptest.NewRequest("GET", "/healthz", nil)), "a released lease is healthy")
}

// scriptedLock is an inner resourcelock.Interface whose Get returns holder.
type scriptedLock struct {
	holder  string
	updates []resourcelock.LeaderElectionRecord
}

func (s *scriptedLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return &resourcelock.LeaderElectionRecord{HolderIdentity: s.holder}, []byte(s.holder), nil
}
func (s *scriptedLock) Create(context.Context, resourcelock.LeaderElectionRecord) error { return nil }
func (s *scriptedLock) Update(_ context.Context, r resourcelock.LeaderElectionRecord) error {
	s.updates = append(s.updates, r)
	s.holder = r.HolderIdentity
	return nil
}
func (s *scriptedLock) RecordEvent(string) {}
func (s *scriptedLock) Identity() string   { return "a" }
func (s *scriptedLock) Describe() string   { return "default/ctrl" }

// client-go's release decides from its last observation, not from the Get just made: a
// leader whose renewals failed while another candidate took over would empty that
// candidate's Lease. The guard refuses.
func TestReleaseRefusedForAnotherHoldersLease(t *testing.T) {
	e, err := NewElector(fake.NewClientset(), fastConfig("a"), Callbacks{})
	require.NoError(t, err)
	s := e.newSession()
	inner := &scriptedLock{holder: "b"}
	l := &guardedLock{inner: inner, s: s, read: new(leaseVersion)}

	_, _, err = l.Get(context.Background())
	require.NoError(t, err)
	err = l.Update(context.Background(), resourcelock.LeaderElectionRecord{LeaseDurationSeconds: 1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `held by "b"`)
	assert.Empty(t, inner.updates, "nothing written")
	assert.Equal(t, "b", e.Leader())

	inner.holder = "a"
	_, _, err = l.Get(context.Background())
	require.NoError(t, err)
	require.NoError(t, l.Update(context.Background(), resourcelock.LeaderElectionRecord{LeaseDurationSeconds: 1}))
	assert.Len(t, inner.updates, 1, "our own lease is released")
	assert.Empty(t, e.Leader())
}

// A release whose OnStartedLeading does not stop within the release timeout is abandoned:
// the Lease expires instead of handing leadership over under running guarded code.
func TestReleaseAbandonedWhileOnStartedLeadingRuns(t *testing.T) {
	e, err := NewElector(fake.NewClientset(), fastConfig("a"), Callbacks{})
	require.NoError(t, err)
	s := e.newSession()
	s.entered = true // OnStartedLeading is running and will not return
	inner := &scriptedLock{holder: "a"}
	l := &guardedLock{inner: inner, s: s, read: new(leaseVersion)}
	_, _, err = l.Get(context.WithValue(context.Background(), engineRunKey{}, true)) // a renewal's
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background()) // the release's, timed out
	cancel()
	_, _, err = l.Get(ctx)
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "OnStartedLeading has not returned")
	err = l.Update(ctx, resourcelock.LeaderElectionRecord{})
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "OnStartedLeading has not returned")
	assert.Empty(t, inner.updates)
}

// probeLock is a lock whose Get reports whether the leader's ctx had ended by then.
type probeLock struct {
	scriptedLock
	lead       context.Context
	endedFirst bool
}

func (p *probeLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	p.endedFirst = p.lead.Err() != nil
	return p.scriptedLock.Get(ctx)
}

// After a failed renewal the engine releases before it cancels OnStartedLeading's ctx, and
// with the API server unreachable its first read alone lasts up to RenewDeadline, past the
// point where a standby may take the expired Lease. The guard ends leadership before that
// read; the engine's own reads (acquire, renew) leave it alone.
func TestReleaseEndsLeadershipBeforeItsFirstRead(t *testing.T) {
	e, err := NewElector(fake.NewClientset(), fastConfig("a"), Callbacks{})
	require.NoError(t, err)
	s := e.newSession()
	lead, cancel := context.WithCancel(context.Background())
	s.lead, s.cancel, s.entered = lead, cancel, true
	go func() { // OnStartedLeading: returns when its ctx ends
		<-lead.Done()
		close(s.done)
	}()
	inner := &probeLock{scriptedLock: scriptedLock{holder: "a"}, lead: lead}
	l := &guardedLock{inner: inner, s: s, read: new(leaseVersion)}

	_, _, err = l.Get(context.WithValue(context.Background(), engineRunKey{}, true))
	require.NoError(t, err)
	assert.False(t, inner.endedFirst, "a renewal's read ended leadership")
	assert.True(t, s.leading())

	_, _, err = l.Get(context.Background()) // the release's
	require.NoError(t, err)
	assert.True(t, inner.endedFirst, "the release read the Lease while the leader's code still ran")
	assert.False(t, s.leading())
}

func TestNilCallbacks(t *testing.T) {
	c := newCluster(0, 7)
	e, err := NewElector(c.client(&netem{}), fastConfig("a"), Callbacks{})
	require.NoError(t, err)
	r := start(e)
	require.Eventually(t, e.IsLeader, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, r.stop(t))
	assert.False(t, e.IsLeader())
}

func TestRunTwiceConcurrently(t *testing.T) {
	c := newCluster(0, 8)
	rec := newRecorder()
	e := newTestElector(t, c, &netem{}, fastConfig("a"), rec)
	r := start(e)
	waitFor(t, rec.started, 5*time.Second, "OnStartedLeading")
	assert.ErrorIs(t, e.Run(context.Background()), ErrAlreadyRunning)
	require.NoError(t, r.stop(t))
}

// A second Run of the same Elector (same identity) finds the Lease still naming it and
// leads again at once, without waiting for it to expire.
func TestRunAgainResumesOwnLease(t *testing.T) {
	c := newCluster(0, 9)
	rec := newRecorder()
	e := newTestElector(t, c, &netem{}, fastConfig("a"), rec)
	r := start(e)
	waitFor(t, rec.started, 5*time.Second, "first term")
	require.NoError(t, r.stop(t))
	began := time.Now()
	r = start(e)
	waitFor(t, rec.started, 5*time.Second, "second term")
	t.Logf("re-acquired own lease in %v", time.Since(began))
	require.NoError(t, r.stop(t))
	starts, stops := rec.counts()
	assert.Equal(t, 2, starts)
	assert.Equal(t, 2, stops)
}

func TestRunCancelledBeforeLeading(t *testing.T) {
	c := newCluster(0, 10)
	rec := newRecorder()
	holder := newRecorder()
	h := newTestElector(t, c, &netem{}, fastConfig("holder"), holder)
	rh := start(h)
	defer rh.stop(t)
	waitFor(t, holder.started, 5*time.Second, "holder to lead")

	e := newTestElector(t, c, &netem{}, fastConfig("a"), rec)
	r := start(e)
	assert.Equal(t, "holder", waitFor(t, rec.newLeaders, 5*time.Second, "OnNewLeader"))
	require.NoError(t, r.stop(t), "a standby whose ctx ends returns nil")
	starts, stops := rec.counts()
	assert.Zero(t, starts)
	assert.Zero(t, stops, "OnStoppedLeading is paired with OnStartedLeading")
}

func TestNewElectorErrors(t *testing.T) {
	_, err := NewElector(nil, fastConfig("a"), Callbacks{})
	assert.ErrorIs(t, err, ErrInvalidConfig)
	var ce *ConfigError
	if assert.ErrorAs(t, err, &ce) {
		assert.Equal(t, "client", ce.Field)
	}
	assert.EqualError(t, err, "invalid leader election config: client must not be nil")
	err = Run(context.Background(), nil, fastConfig("a"), Callbacks{})
	assert.ErrorIs(t, err, ErrInvalidConfig)

	bad := fastConfig("a")
	bad.RetryPeriod = time.Second
	_, err = NewElector(fake.NewClientset(), bad, Callbacks{})
	assert.ErrorIs(t, err, ErrInvalidConfig)
	assert.ErrorContains(t, err, "renewDeadline 600ms must be greater than JitterFactor 1.2 × retryPeriod 1s = 1.2s")

	outsidePod(t)
	e, err := NewElector(fake.NewClientset(), Config{Name: "x"}, Callbacks{})
	require.NoError(t, err, "zero values mean defaults")
	got := e.Config()
	assert.Equal(t, DefaultLeaseDuration, got.LeaseDuration)
	assert.Equal(t, DefaultNamespace, got.Namespace)
	assert.Equal(t, got.Identity, e.Identity())
	assert.NotEmpty(t, e.Identity())
	assert.Equal(t, "leaderelection", e.Name())
}

func TestPackageRun(t *testing.T) {
	c := newCluster(0, 11)
	ctx, cancel := context.WithCancel(quietCtx(context.Background()))
	defer cancel()
	var led atomic.Bool
	err := Run(ctx, c.client(&netem{}), fastConfig("a"), Callbacks{
		OnStartedLeading: func(ctx context.Context) {
			led.Store(true)
			cancel()
		},
	})
	require.NoError(t, err)
	assert.True(t, led.Load())
}

// client-go notices renewals by comparing the record's JSON, whose renew time has
// one-second resolution; the lock adds the resourceVersion and the precise renew time so
// that two renewals within one second still look different to a standby — on an API
// server (resourceVersion) and on a plain fake clientset (which sets none).
func TestRenewalsWithinOneSecondAreVisible(t *testing.T) {
	for name, cs := range map[string]*fake.Clientset{"occ": newCluster(0, 12).cs, "plain fake": fake.NewClientset()} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			second := time.Now().Truncate(time.Second)
			leases := cs.CoordinationV1().Leases("default")
			_, err := leases.Create(ctx, &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: "ctrl", Namespace: "default"},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a"), LeaseDurationSeconds: ptr.To[int32](1),
					RenewTime: &metav1.MicroTime{Time: second.Add(100 * time.Millisecond)}},
			}, metav1.CreateOptions{})
			require.NoError(t, err)

			e, err := NewElector(cs, fastConfig("b"), Callbacks{})
			require.NoError(t, err)
			read := new(leaseVersion)
			plain := &resourcelock.LeaseLock{
				LeaseMeta:  metav1.ObjectMeta{Namespace: "default", Name: "ctrl"},
				Client:     versionLeases{LeasesGetter: cs.CoordinationV1(), read: read},
				LockConfig: resourcelock.ResourceLockConfig{Identity: "b"},
			}
			l := &guardedLock{inner: plain, s: e.newSession(), read: read}

			_, plainBefore, err := plain.Get(ctx)
			require.NoError(t, err)
			_, before, err := l.Get(ctx)
			require.NoError(t, err)
			// The leader renews 200 ms later, within the same second.
			cur, err := leases.Get(ctx, "ctrl", metav1.GetOptions{})
			require.NoError(t, err)
			cur.Spec.RenewTime = &metav1.MicroTime{Time: second.Add(300 * time.Millisecond)}
			_, err = leases.Update(ctx, cur, metav1.UpdateOptions{})
			require.NoError(t, err)
			_, plainAfter, err := plain.Get(ctx)
			require.NoError(t, err)
			_, after, err := l.Get(ctx)
			require.NoError(t, err)

			assert.Equal(t, string(plainBefore), string(plainAfter), "client-go's record cannot tell the renewals apart")
			assert.NotEqual(t, string(before), string(after), "the guarded lock's can")
		})
	}
}

// No goroutine started by an Elector (or by client-go's engine for it) outlives Run, for a
// leader with every callback set and for a standby.
func TestNoGoroutineLeftAfterRun(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	c := newCluster(0, 13)
	cfgA := fastConfig("a")
	cfgA.ReleaseOnCancel = true
	recA, recB := newRecorder(), newRecorder()
	a := newTestElector(t, c, &netem{}, cfgA, recA)
	b := newTestElector(t, c, &netem{}, fastConfig("b"), recB)
	ra := start(a)
	waitFor(t, recA.started, 5*time.Second, "a to lead")
	rb := start(b)
	waitForValue(t, recB.newLeaders, "a", 5*time.Second, "b to see a")
	require.NoError(t, ra.stop(t))
	waitFor(t, recB.started, 5*time.Second, "b to take over")
	require.NoError(t, rb.stop(t))
}

// blockingLock is a lock whose every call waits for its ctx: an API server that does not
// answer.
type blockingLock struct{ scriptedLock }

func (b *blockingLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	<-ctx.Done()
	return nil, nil, ctx.Err()
}

// The engine gives its release RenewDeadline; with the API server unreachable a shutdown would
// wait that long for nothing. The guard gives the release's calls releaseTimeout together.
func TestReleaseGivesUpAfterItsTimeout(t *testing.T) {
	e, err := NewElector(fake.NewClientset(), fastConfig("a"), Callbacks{})
	require.NoError(t, err)
	s := e.newSession()
	l := &guardedLock{inner: &blockingLock{scriptedLock{holder: "a"}}, s: s, read: new(leaseVersion), releaseTimeout: 50 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour) // the engine's
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, _, err := l.Get(ctx)
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(30 * time.Second):
		t.Fatal("the release's read waited for the engine's deadline, not the release timeout")
	}
	assert.Equal(t, min(fastConfig("a").RenewDeadline, 2*fastConfig("a").RetryPeriod), e.ReleaseTimeout())
}
