package demo_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// An example binary against a cluster serves /metrics securely by default (a self-signed
// certificate): a ServiceAccount's token reads it only once a ClusterRole grants get on
// /metrics (403 before); no token is 401; the probes stay open on plain HTTP. This is how an example's
// RBAC manifests can be checked: run the binary with --kubeconfig, find the metrics address in
// its "Serving" log line, GET https://ADDR/metrics with "Authorization: Bearer TOKEN".
func TestRunServesSecureMetricsAPIServer(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ctx, ns, admin := env.Context(), env.Namespace(), env.Client()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, demo.WriteKubeconfig(kubeconfig, env.Config()))

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var out rbactest.LogBuffer
	done := make(chan int, 1)
	go func() {
		done <- demo.Run(runCtx, program(new(bool)), []string{"--kubeconfig", kubeconfig, "--leader-elect=false",
			"--metrics-addr=127.0.0.1:0", "--health-addr=127.0.0.1:0", "--profiling"}, &out)
	}()
	serving := regexp.MustCompile(`"Serving" addr="([^"]+)" what=\["(\w+)"\] https=(\w+)`)
	addrs := map[string]string{}
	require.Eventually(t, func() bool {
		for _, m := range serving.FindAllStringSubmatch(out.String(), -1) {
			addrs[m[2]] = m[1]
			assert.Equal(t, m[2] == "metrics", m[3] == "true", "only metrics on HTTPS: %s", m[0])
		}
		return len(addrs) == 2
	}, time.Minute, 10*time.Millisecond, "%s", &out)

	_, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "prometheus"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	mint := func() string {
		tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "prometheus", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		require.NoError(t, err)
		return tr.Status.Token
	}
	token := mint()

	transport := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // self-signed
	defer transport.CloseIdleConnections()
	hc := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	get := func(url, token string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	metrics := "https://" + addrs["metrics"] + "/metrics"
	assert.Equal(t, http.StatusOK, get("http://"+addrs["health"]+"/healthz", ""))
	assert.Equal(t, http.StatusUnauthorized, get(metrics, ""))
	assert.Equal(t, http.StatusForbidden, get(metrics, token))
	assert.Equal(t, http.StatusOK, get(metrics, env.Config().BearerToken), "the cluster admin may")

	role := "metrics-reader-" + ns // cluster-scoped names, on a shared server
	_, err = admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "prometheus"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), role, metav1.DeleteOptions{})
		_ = admin.RbacV1().ClusterRoles().Delete(context.Background(), role, metav1.DeleteOptions{})
	})
	// The binary caches the first token's denial for the manager's default DenyCacheTTL (30 s); a
	// fresh token of the same ServiceAccount is not in the cache, so the grant shows at once
	// (RBAC itself may take a moment to see the binding).
	fresh := mint()
	require.Eventually(t, func() bool { return get(metrics, fresh) == http.StatusOK }, time.Minute, 100*time.Millisecond)
	assert.Equal(t, http.StatusForbidden, get("https://"+addrs["metrics"]+"/debug/pprof/cmdline", fresh),
		"profiling needs its own grant")

	cancel()
	select {
	case code := <-done:
		assert.Equal(t, demo.ExitOK, code, out.String())
	case <-time.After(time.Minute):
		t.Fatal("run did not return after its context ended")
	}
}
