package leaderelection

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// What a probe sees after each sequence of lock operations: failures stay until the Lease is
// accessible again, and do not flap between the get and the write of one attempt.
func TestLeaseAccessStates(t *testing.T) {
	const lease, me = "ns/ctrl", "me"
	forbidden := func(verb string) error {
		return apierrors.NewForbidden(leasesGVR.GroupResource(), "ctrl", errors.New("RBAC: "+verb+" not allowed"))
	}
	notFound := apierrors.NewNotFound(leasesGVR.GroupResource(), "ctrl")
	conflict := apierrors.NewConflict(leasesGVR.GroupResource(), "ctrl", errors.New("stale"))
	exists := apierrors.NewAlreadyExists(leasesGVR.GroupResource(), "ctrl")
	v1, v2 := leaseVersion{resourceVersion: "1"}, leaseVersion{resourceVersion: "2"}
	type op func(a *leaseAccess)
	get := func(holder string, v leaseVersion, err error) op {
		return func(a *leaseAccess) { a.got(klog.Background(), lease, me, holder, v, err) }
	}
	write := func(verb string, v leaseVersion, err error) op {
		return func(a *leaseAccess) { a.wrote(klog.Background(), lease, verb, v, err) }
	}
	for _, tc := range []struct {
		name string
		ops  []op
		verb string // of the failure reported, "" for ready
	}{
		{"nothing yet", nil, ""},
		{"get refused", []op{get("", v1, forbidden("get"))}, "get"},
		{"get works again", []op{get("", v1, forbidden("get")), get("other", v1, nil)}, ""},
		{"create refused", []op{get("", leaseVersion{}, notFound), write("create", leaseVersion{}, forbidden("create"))}, "create"},
		{"still refused: the next attempt's get does not pass it",
			[]op{get("", leaseVersion{}, notFound), write("create", leaseVersion{}, forbidden("create")), get("", leaseVersion{}, notFound)}, "create"},
		{"created after all", []op{write("create", leaseVersion{}, forbidden("create")), get("", leaseVersion{}, notFound), write("create", leaseVersion{}, nil)}, ""},
		{"another candidate created it first", []op{write("create", leaseVersion{}, exists)}, ""},
		{"another candidate wrote first", []op{write("update", v1, forbidden("update")), write("update", v1, conflict)}, ""},
		{"takeover of an expired Lease refused", []op{get("dead", v1, nil), write("update", v1, forbidden("update"))}, "update"},
		{"the expired Lease unchanged: still refused",
			[]op{get("dead", v1, nil), write("update", v1, forbidden("update")), get("dead", v1, nil)}, "update"},
		{"a live holder renewed it: a standby, which reads fine",
			[]op{get("dead", v1, nil), write("update", v1, forbidden("update")), get("live", v2, nil)}, ""},
		{"a leader's renewal refused", []op{get(me, v1, nil), write("update", v1, forbidden("update")), get(me, v1, nil)}, "update"},
		{"a released Lease, its take-over refused",
			[]op{write("update", v1, forbidden("update")), get("", v2, nil)}, "update"},
		{"the namespace does not exist", []op{get("", leaseVersion{}, notFound), write("create", leaseVersion{}, notFound)}, "create"},
		// What strikes every replica at once is the engine's to retry, not a readiness failure.
		{"an API server that does not answer", []op{get("", v1, errors.New("dial tcp: connection refused"))}, ""},
		{"a server error", []op{get(me, v1, nil), write("update", v1, apierrors.NewInternalError(errors.New("etcd unavailable")))}, ""},
		{"throttled", []op{get("", v1, apierrors.NewTooManyRequests("slow down", 1))}, ""},
		{"a timeout", []op{write("update", v1, apierrors.NewTimeoutError("took too long", 1))}, ""},
		{"a refusal stays through a server error",
			[]op{get("", v1, forbidden("get")), get("", v1, apierrors.NewServiceUnavailable("restarting"))}, "get"},
		{"credentials not accepted", []op{get("", v1, apierrors.NewUnauthorized("token expired"))}, "get"},
	} {
		var a leaseAccess
		for _, o := range tc.ops {
			o(&a)
		}
		err := a.err()
		if tc.verb == "" {
			assert.NoError(t, err, tc.name)
			continue
		}
		var lae *LeaseAccessError
		if assert.ErrorAs(t, err, &lae, tc.name) {
			assert.Equal(t, tc.verb, lae.Verb, tc.name)
			assert.Equal(t, lease, lae.Lease, tc.name)
			assert.ErrorIs(t, err, ErrLeaseAccess, tc.name)
		}
	}
}

// refusals is a fake API server's RBAC: it refuses a verb on Leases while told to, as the
// real one answers a ServiceAccount whose Role lacks the rule.
type refusals struct {
	get, create, update atomic.Bool
	// updateHolder, when set, limits the update refusal to writes naming that holder: one
	// candidate's rights, on a clientset all candidates share.
	updateHolder string
}

func (r *refusals) install(cs *fake.Clientset) {
	for verb, on := range map[string]*atomic.Bool{"get": &r.get, "create": &r.create, "update": &r.update} {
		cs.PrependReactor(verb, "leases", func(action clienttesting.Action) (bool, runtime.Object, error) {
			if !on.Load() {
				return false, nil, nil
			}
			if u, ok := action.(clienttesting.UpdateAction); ok && verb == "update" && r.updateHolder != "" &&
				holderOf(u.GetObject().(*coordinationv1.Lease)) != r.updateHolder {
				return false, nil, nil
			}
			return true, nil, apierrors.NewForbidden(leasesGVR.GroupResource(), "ctrl",
				errors.New(`User "system:serviceaccount:default:ctrl" cannot `+verb+` resource "leases"`))
		})
	}
}

// awaitLeaseError waits until ReadyCheck reports verb refused, and returns its error.
func awaitLeaseError(t *testing.T, e *Elector, verb string) error {
	t.Helper()
	var err error
	require.Eventually(t, func() bool {
		var lae *LeaseAccessError
		err = e.ReadyCheck(nil)
		return errors.As(err, &lae) && lae.Verb == verb
	}, 10*time.Second, 5*time.Millisecond, "ReadyCheck never reported %s refused; last: %v", verb, err)
	return err
}

// A candidate without the right to read, then to create its Lease is not ready, and says which
// Lease and verb the API server refused, while /healthz's Check passes; given the rights, it
// leads and is ready.
func TestReadyCheckNamesTheRefusedVerb(t *testing.T) {
	cs := fake.NewClientset()
	var deny refusals
	deny.get.Store(true)
	deny.create.Store(true)
	deny.install(cs)
	rec := newRecorder()
	e, err := NewElector(cs, fastConfig("a"), rec.callbacks())
	require.NoError(t, err)
	require.NoError(t, e.ReadyCheck(nil), "ready before Run")
	r := start(e)

	err = awaitLeaseError(t, e, "get")
	assert.True(t, apierrors.IsForbidden(err), "unwraps to the API server's answer: %v", err)
	assert.ErrorIs(t, err, ErrLeaseAccess)
	assert.Contains(t, err.Error(), `cannot get lease default/ctrl: leases.coordination.k8s.io "ctrl" is forbidden`)
	assert.NoError(t, e.Check(nil), "healthy: a restart would not help")

	deny.get.Store(false)
	err = awaitLeaseError(t, e, "create")
	assert.Contains(t, err.Error(), "cannot create lease default/ctrl")
	assert.False(t, e.IsLeader())

	deny.create.Store(false)
	waitFor(t, rec.started, 10*time.Second, "leadership once the Lease can be created")
	require.NoError(t, e.ReadyCheck(nil))
	require.NoError(t, r.stop(t))
	assert.NoError(t, e.ReadyCheck(nil), "ready after a Run that ended with its ctx")
}

// A standby that reads the Lease while another candidate holds and renews it is ready, even when
// it may not write it; once the holder is gone and it cannot take over, it is not; when a
// holder renews again it is a ready standby again, and given the right it takes over.
func TestReadyCheckStandby(t *testing.T) {
	c := newCluster(0, 1)
	deny := refusals{updateHolder: "b"}
	deny.update.Store(true)
	deny.install(c.cs)

	recA := newRecorder()
	a, err := NewElector(c.cs, fastConfig("a"), recA.callbacks())
	require.NoError(t, err)
	ra := start(a)
	waitFor(t, recA.started, 10*time.Second, "a leads")

	recB := newRecorder()
	b, err := NewElector(c.cs, fastConfig("b"), recB.callbacks())
	require.NoError(t, err)
	rb := start(b)
	defer func() { _ = rb.stop(t) }()
	waitForValue(t, recB.newLeaders, "a", 10*time.Second, "b observes a")
	// Some of a's renewals after b first read the Lease: b polled through them.
	renewals := len(c.log())
	require.Eventually(t, func() bool { return len(c.log()) >= renewals+3 }, 10*time.Second, 5*time.Millisecond)
	assert.NoError(t, b.ReadyCheck(nil), "a standby that reads the Lease is ready")

	// a stops without releasing: the Lease expires, and b may not update it.
	require.NoError(t, ra.stop(t))
	err = awaitLeaseError(t, b, "update")
	assert.Contains(t, err.Error(), "cannot update lease default/ctrl")
	assert.False(t, b.IsLeader())

	// a comes back and renews (its identity still holds the Lease): b is a standby again.
	a2, err := NewElector(c.cs, fastConfig("a"), newRecorder().callbacks())
	require.NoError(t, err)
	ra2 := start(a2)
	require.Eventually(t, func() bool { return b.ReadyCheck(nil) == nil }, 10*time.Second, 5*time.Millisecond,
		"b reads a's renewed Lease")

	deny.update.Store(false)
	require.NoError(t, ra2.stop(t))
	waitFor(t, recB.started, 10*time.Second, "b takes over once it may update the Lease")
	assert.NoError(t, b.ReadyCheck(nil))
}

// A refusal is logged when it begins and when it ends, not at every retry of the engine.
func TestLeaseAccessLogsChanges(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	buf := logger.GetSink().(ktesting.Underlier).GetBuffer()
	forbidden := apierrors.NewForbidden(leasesGVR.GroupResource(), "ctrl", errors.New("RBAC: update not allowed"))
	v1 := leaseVersion{resourceVersion: "1"}
	var a leaseAccess
	for range 3 {
		a.got(logger, "ns/ctrl", "me", "me", v1, nil)
		a.wrote(logger, "ns/ctrl", "update", v1, forbidden)
	}
	assert.Equal(t, 1, strings.Count(buf.String(), "The API server refuses this replica its lease"), buf.String())
	assert.Contains(t, buf.String(), `verb="update"`)
	a.wrote(logger, "ns/ctrl", "update", v1, nil)
	a.wrote(logger, "ns/ctrl", "update", v1, nil)
	assert.Equal(t, 1, strings.Count(buf.String(), "The lease is accessible again"), buf.String())
}

// A refusal outlives the Run that met it: a candidate contending again after the Lease it could
// not renew is lost reads the Lease before it writes, and must not look accessible meanwhile.
func TestReadyCheckKeepsARefusalAcrossRuns(t *testing.T) {
	e, err := NewElector(fake.NewClientset(), fastConfig("a"), Callbacks{})
	require.NoError(t, err)
	forbidden := apierrors.NewForbidden(leasesGVR.GroupResource(), "ctrl", errors.New("RBAC: update not allowed"))
	v1 := leaseVersion{resourceVersion: "1"}
	lost := e.newSession()
	lost.access.wrote(klog.Background(), "default/ctrl", "update", v1, forbidden)
	lost.end(false)

	again := e.newSession()
	e.mu.Lock()
	e.cur = again
	e.mu.Unlock()
	again.access.got(klog.Background(), "default/ctrl", "a", "a", v1, nil) // its own expired Lease, read fine
	assert.ErrorIs(t, e.ReadyCheck(nil), ErrLeaseAccess, "still refused until a write succeeds")
	again.access.wrote(klog.Background(), "default/ctrl", "update", v1, nil)
	assert.NoError(t, e.ReadyCheck(nil))
}
