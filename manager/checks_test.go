package manager

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/controller"
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
	assert.ErrorIs(t, m.AddReadyzCheck("", func(*http.Request) error { return nil }), controller.ErrInvalidOptions)
	assert.ErrorIs(t, m.AddReadyzCheck("nil", nil), controller.ErrInvalidOptions)

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

	assert.ErrorIs(t, m.AddReadyzCheck("late", func(*http.Request) error { return nil }), controller.ErrAlreadyStarted)
	require.NoError(t, stop())
}
