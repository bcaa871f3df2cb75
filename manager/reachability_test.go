package manager

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The probe's one ask: a refusal (403) is an answer, a 5xx or no connection is not, and it
// goes around the clientset's rate limiter, which a throttled controller may have used up.
func TestProbeAsksReadyzAroundTheRateLimiter(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusForbidden)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "/prefix/readyz", r.URL.Path)
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()
	// One token, used up: a rate-limited ask would wait.
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL + "/prefix", QPS: 0.001, Burst: 1})
	require.NoError(t, err)
	m, err := New(Options{Client: cs})
	require.NoError(t, err)
	defer m.factory.Shutdown()
	ask := m.probe()
	require.NotNil(t, ask)
	for range 3 {
		assert.NoError(t, ask(context.Background()), "403 is an answer")
	}
	status.Store(http.StatusServiceUnavailable)
	assert.ErrorContains(t, ask(context.Background()), "503")
	srv.Close()
	assert.Error(t, ask(context.Background()), "no connection")
}
