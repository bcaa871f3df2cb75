package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// An operator's SIGTERM under load, black box: the binary reconciles forty ReplicaSets
// against the real API server, reached through an HTTP proxy that makes each ReplicaSet
// status write take 300 ms (a loaded server), and is stopped while status writes are in
// flight. Every write it had sent lands — none is cut off by the shutdown, which would leave
// those ReplicaSets' status stale until a new leader gets to them — and it exits 0 within
// 5 s.
func TestSIGTERMUnderLoadLetsTheWritesInFlightLand(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ns := env.Namespace()
	p := newWriteProxy(t, env.Config(), 300*time.Millisecond)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, demo.WriteKubeconfig(path, &rest.Config{Host: p.url}))
	ctx, cancel := context.WithCancel(env.Context())
	defer cancel()
	var out rbactest.LogBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--kubeconfig=" + path, "--metrics-addr=", "--health-addr=127.0.0.1:0",
			"--leader-elect-resource-namespace=" + ns, "--leader-elect-resource-name=rs-" + ns}, &out)
	}()
	for i := range 40 {
		_, err := env.Client().AppsV1().ReplicaSets(ns).Create(env.Context(), replicaSet(ns, fmt.Sprintf("rs-%d", i), "", 2), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return p.stats().inFlight >= 2 }, time.Minute, time.Millisecond,
		"status writes in flight: %s", &out)
	atStop := p.stats()
	cancel()
	stopped := time.Now()
	select {
	case code := <-done:
		took := time.Since(stopped)
		t.Logf("exited %v after the SIGTERM, with %d status writes in flight then", took.Round(time.Millisecond), atStop.inFlight)
		assert.Equal(t, 0, code, "%s", &out)
		assert.Less(t, took, 5*time.Second, "%s", &out)
	case <-time.After(time.Minute):
		t.Fatalf("the binary did not exit: %s", &out)
	}
	// The proxy accounts for a write after the binary has its answer: give it a moment.
	assert.Eventually(t, func() bool { return p.stats().inFlight == 0 }, 10*time.Second, time.Millisecond)
	end := p.stats()
	assert.Empty(t, end.cut, "writes cut off by the shutdown: %s", &out)
	assert.GreaterOrEqual(t, end.landed, atStop.landed+atStop.inFlight, "every status write in flight at the SIGTERM landed")
	for _, line := range strings.Split(out.String(), "\n") {
		// client-go's reflector may log its own watch ending with the context (a watch read
		// when the informers stop); what must not appear is a Reconcile cut off by it.
		if strings.Contains(line, "Warning: watch ended with error") {
			continue
		}
		assert.NotContains(t, line, "context canceled", "no Reconcile failed on its cancelled context")
	}
}

// writeProxy forwards every request to the API server with the test's credentials, holding
// each ReplicaSet status write for delay first, and accounts for the writes the binary makes:
// in flight, landed (the API server answered), or cut (the binary gave up on it first).
type writeProxy struct {
	url   string
	delay time.Duration

	mu       sync.Mutex
	inFlight int
	landed   int
	cut      []string
}

type writeStats struct {
	inFlight, landed int
	cut              []string
}

func newWriteProxy(t *testing.T, cfg *rest.Config, delay time.Duration) *writeProxy {
	t.Helper()
	target, err := url.Parse(cfg.Host)
	require.NoError(t, err)
	rt, err := rest.TransportFor(cfg)
	require.NoError(t, err)
	p := &writeProxy{delay: delay}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     rt,
		FlushInterval: -1, // watches stream
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if isWrite(r) {
				p.record(r, err)
			}
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isWrite(r) {
			rp.ServeHTTP(w, r)
			return
		}
		p.mu.Lock()
		p.inFlight++
		p.mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/status") && strings.Contains(r.URL.Path, "/replicasets/") {
			select {
			case <-time.After(p.delay): // the loaded server's time to answer
			case <-r.Context().Done():
				p.record(r, r.Context().Err())
				return
			}
		}
		rec := &recordingWriter{ResponseWriter: w}
		rp.ServeHTTP(rec, r)
		if !rec.failed {
			p.record(r, nil)
		}
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// isWrite is a write of the controller's own objects: ReplicaSets and Pods.
func isWrite(r *http.Request) bool {
	return r.Method != http.MethodGet && (strings.Contains(r.URL.Path, "/replicasets") || strings.Contains(r.URL.Path, "/pods"))
}

// record ends the accounting of one write: landed when err is nil, else cut.
func (p *writeProxy) record(r *http.Request, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inFlight--
	if err == nil {
		p.landed++
		return
	}
	p.cut = append(p.cut, fmt.Sprintf("%s %s: %v", r.Method, r.URL.Path, err))
}

func (p *writeProxy) stats() writeStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return writeStats{inFlight: p.inFlight, landed: p.landed, cut: append([]string(nil), p.cut...)}
}

// recordingWriter notes that the ReverseProxy's ErrorHandler answered (and recorded) the request.
type recordingWriter struct {
	http.ResponseWriter
	failed bool
}

func (w *recordingWriter) WriteHeader(code int) {
	if code == http.StatusBadGateway {
		w.failed = true
	}
	w.ResponseWriter.WriteHeader(code)
}
