package manager

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestUserHealthAndReadinessChecks(t *testing.T) {
	m, err := New(Options{Client: fake.NewClientset()})
	require.NoError(t, err)
	var dbDown, stuck atomic.Bool
	require.NoError(t, m.AddReadyzCheck("database", func(*http.Request) error {
		if dbDown.Load() {
			return errors.New("connection refused")
		}
		return nil
	}))
	require.NoError(t, m.AddHealthzCheck("worker-pool", func(*http.Request) error {
		if stuck.Load() {
			return errors.New("no progress for 10m")
		}
		return nil
	}))
	assert.ErrorIs(t, m.AddReadyzCheck("database", func(*http.Request) error { return nil }), ErrDuplicateCheck)
	assert.NoError(t, m.AddHealthzCheck("database", func(*http.Request) error { return nil }), "names are per endpoint")
	assert.ErrorIs(t, m.AddReadyzCheck("", func(*http.Request) error { return nil }), ErrInvalidOptions)
	assert.ErrorIs(t, m.AddReadyzCheck("nil", nil), ErrInvalidOptions)

	ctx, _ := testLogger(t)
	stop := startManager(t, ctx, m)
	h := m.Handler()
	require.Eventually(t, func() bool { code, _ := get(t, h, "/readyz"); return code == http.StatusOK }, 10*time.Second, time.Millisecond)

	dbDown.Store(true)
	code, body := get(t, h, "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "database: connection refused")
	code, _ = get(t, h, "/healthz")
	assert.Equal(t, http.StatusOK, code, "readiness checks do not touch /healthz")

	stuck.Store(true)
	code, body = get(t, h, "/healthz")
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.Contains(t, body, "worker-pool: no progress for 10m")

	assert.ErrorIs(t, m.AddReadyzCheck("late", func(*http.Request) error { return nil }), ErrAlreadyStarted)
	require.NoError(t, stop())
}

// With leader election, /readyz fails while the replica may not create its Lease, naming the
// check, the Lease and the verb, while /healthz passes; allowed, it leads and is ready. The
// check's name is taken.
func TestReadyzFailsWithoutLeaseAccess(t *testing.T) {
	client := fake.NewClientset()
	var refuse atomic.Bool
	refuse.Store(true)
	client.PrependReactor("create", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		if refuse.Load() {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "",
				errors.New(`User "ctrl" cannot create resource "leases"`))
		}
		return false, nil, nil
	})
	m, err := New(Options{Client: client, LeaderElection: fastElection("a")})
	require.NoError(t, err)
	assert.ErrorIs(t, m.AddReadyzCheck("leaderelection", func(*http.Request) error { return nil }), ErrDuplicateCheck)
	ctx, _ := testLogger(t)
	stop := startManager(t, ctx, m)
	h := m.Handler()
	var body string
	require.Eventually(t, func() bool {
		var code int
		code, body = get(t, h, "/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "cannot create lease")
	}, 10*time.Second, time.Millisecond)
	assert.Contains(t, body, `leaderelection: cannot create lease kube-system/ctrlkit-test: leases.coordination.k8s.io is forbidden`)
	code, _ := get(t, h, "/healthz")
	assert.Equal(t, http.StatusOK, code, "a restart would not help")
	assert.False(t, m.Elector().IsLeader())

	refuse.Store(false)
	require.Eventually(t, m.Elector().IsLeader, 10*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { code, _ := get(t, h, "/readyz"); return code == http.StatusOK }, 10*time.Second, time.Millisecond)
	require.NoError(t, stop())
}

// A Lease refused to a replica that has been ready (here the leader, whose renewal is refused)
// takes no readiness away: /readyz stays 200, /readyz?verbose names the Lease and the refusal,
// and the line clears once the Lease is writable again.
func TestReadyzKeptThroughALeaseRefusal(t *testing.T) {
	client := fake.NewClientset()
	var refuse atomic.Bool
	client.PrependReactor("update", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		if refuse.Load() {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "ctrlkit-test",
				errors.New(`User "ctrl" cannot update resource "leases"`))
		}
		return false, nil, nil
	})
	m, err := New(Options{Client: client, LeaderElection: fastElection("a")})
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	stop := startManager(t, ctx, m)
	h := m.Handler()
	require.Eventually(t, m.Elector().IsLeader, 10*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { code, _ := get(t, h, "/readyz"); return code == http.StatusOK }, 10*time.Second, time.Millisecond)

	refuse.Store(true)
	var code int
	var body string
	require.Eventually(t, func() bool {
		code, body = get(t, h, "/readyz?verbose")
		return strings.Contains(body, "[+]leaderelection ok, but: cannot update lease kube-system/ctrlkit-test: ")
	}, 10*time.Second, time.Millisecond)
	assert.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "[+]synced ok\n")
	assert.True(t, strings.HasSuffix(body, "readyz check passed\n"), body)
	code, body = get(t, h, "/readyz")
	assert.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "ok", body)

	refuse.Store(false)
	require.Eventually(t, func() bool {
		code, body = get(t, h, "/readyz?verbose")
		return code == http.StatusOK && strings.Contains(body, "[+]leaderelection ok\n")
	}, 10*time.Second, time.Millisecond, body)
	require.NoError(t, stop())
}
