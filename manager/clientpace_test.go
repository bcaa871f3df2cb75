package manager_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/manager"
)

// namespaceServer answers GET /api/v1/namespaces/<name> with a Namespace, as an API server
// would, and counts the requests.
func namespaceServer(t testing.TB) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"}}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// kubeconfigFor points $KUBECONFIG at a kubeconfig for host, for the Manager's GetConfig.
func kubeconfigFor(t testing.TB, host string) {
	path := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+host+`"}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))
	t.Setenv("KUBECONFIG", path)
}

// A user who changes nothing (manager.New(manager.Options{}) on the kubeconfig) gets a client
// without client-side rate limit, as with controller-runtime: client-go's 5 QPS would make
// the 60 GETs below take 10 s.
func TestDefaultClientHasNoRateLimiter(t *testing.T) {
	kubeconfigFor(t, namespaceServer(t).URL)
	mgr, err := manager.New(manager.Options{})
	require.NoError(t, err)
	defer mgr.Factory().Shutdown()
	assert.Nil(t, mgr.Client().CoreV1().RESTClient().GetRateLimiter(), "the default client has a rate limiter")
	for range 60 {
		_, err := mgr.Client().CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})
		require.NoError(t, err)
	}

	cfg, err := manager.GetConfig()
	require.NoError(t, err)
	assert.Negative(t, cfg.QPS, "GetConfig's QPS: negative is client-go's no limiter")
}

// A Config with a QPS of its own keeps it; one with client-go's default (0) gets none, and the
// caller's Config is not changed.
func TestConfigQPSIsKept(t *testing.T) {
	host := namespaceServer(t).URL
	limited := &rest.Config{Host: host, QPS: 20, Burst: 30}
	mgr, err := manager.New(manager.Options{Config: limited})
	require.NoError(t, err)
	defer mgr.Factory().Shutdown()
	rl := mgr.Client().CoreV1().RESTClient().GetRateLimiter()
	require.NotNil(t, rl)
	assert.InDelta(t, 20, rl.QPS(), 0.001)

	zero := &rest.Config{Host: host}
	mgr, err = manager.New(manager.Options{Config: zero})
	require.NoError(t, err)
	defer mgr.Factory().Shutdown()
	assert.Nil(t, mgr.Client().CoreV1().RESTClient().GetRateLimiter())
	assert.Zero(t, zero.QPS, "New changed the caller's Config")
}

// The 60 GETs of TestDefaultClientHasNoRateLimiter, timed: about 10 s with client-go's default
// limiter, milliseconds without.
func BenchmarkDefaultClient60Gets(b *testing.B) {
	kubeconfigFor(b, namespaceServer(b).URL)
	mgr, err := manager.New(manager.Options{})
	require.NoError(b, err)
	defer mgr.Factory().Shutdown()
	for b.Loop() {
		for range 60 {
			if _, err := mgr.Client().CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
