package manager

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// A Manager that built its clients from a Config closes their connections once the API server
// answers again after asks that got no answer at all (dead connections look like that), and
// dials each ask of its probe afresh meanwhile.
func TestProbeClosesTheClientsConnectionsAfterAnOutage(t *testing.T) {
	var hang, fail atomic.Bool
	release := make(chan struct{})
	var mu sync.Mutex
	closed := map[string]bool{} // remote address of each connection → closed
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" && hang.Load() {
			select { // no answer, as over a dead connection
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		if r.URL.Path == "/readyz" && fail.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"major":"1","minor":"37"}`))
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		closed[c.RemoteAddr().String()] = s == http.StateClosed
	}
	srv.Start()
	defer srv.Close()
	defer close(release)
	m, err := New(Options{Config: &rest.Config{Host: srv.URL}, APIServerProbeInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	defer m.factory.Shutdown()
	clientConn := func() []string { // the connections open now
		mu.Lock()
		defer mu.Unlock()
		var open []string
		for a, c := range closed {
			if !c {
				open = append(open, a)
			}
		}
		return open
	}
	_, err = m.client.Discovery().ServerVersion()
	require.NoError(t, err)
	require.Len(t, clientConn(), 1, "the clientset's connection")
	client := clientConn()[0]

	ctx, cancel := context.WithCancel(context.Background())
	var probing sync.WaitGroup
	probing.Go(func() { m.probeAPIServer(ctx, 20*time.Millisecond) })
	defer probing.Wait()
	defer cancel()

	fail.Store(true) // answered: the connections work
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(closed) >= 2 }, 10*time.Second, time.Millisecond, "the probe asked")
	fail.Store(false)
	hang.Store(true)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(closed) >= 4 }, 10*time.Second, time.Millisecond,
		"each unanswered ask is followed by one on a new connection")
	mu.Lock()
	assert.False(t, closed[client], "not yet: the server has not answered again")
	mu.Unlock()
	hang.Store(false)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return closed[client] }, 10*time.Second, time.Millisecond,
		"the clientset's connection is closed once the server answers again")
}
