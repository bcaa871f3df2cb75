package manager_test

import (
	"crypto/tls"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/manager/internal/delegatedauth/delegatedauthtest"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// Secure metrics against a real kube-apiserver with RBAC: the Manager's own ServiceAccount
// holds only system:auth-delegator; a scraper's ServiceAccount token is 401 nowhere, 403 until a
// ClusterRole grants get on /metrics, 200 once it does (after the cached denial expired), and
// 403 again once the grant is gone; a Manager whose identity may not review tokens answers 500.
func TestSecureMetricsAPIServer(t *testing.T) {
	// A server of its own, as in TestManagerLeaderElectionAPIServer: the package's goleak
	// checks must not see a shared server's goroutines.
	env := testkit.NewAPIServer(t)
	ctx, ns, admin := env.Context(), env.Namespace(), env.Client()
	const ttl = 300 * time.Millisecond

	token := func(sa string) string {
		t.Helper()
		_, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
		require.NoError(t, err)
		tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		require.NoError(t, err)
		return tr.Status.Token
	}
	clientAs := func(token string) kubernetes.Interface {
		t.Helper()
		cfg := env.Config()
		cfg.BearerToken = token
		c, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		return c
	}
	bind := func(name, role, sa string) {
		t.Helper()
		_, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	managerToken, scraperToken := token("controller"), token("prometheus")
	bind("controller-auth-delegator", "system:auth-delegator", "controller")

	start := func(client kubernetes.Interface) string {
		t.Helper()
		mgr, err := manager.New(manager.Options{
			Client:      client,
			Logger:      ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2))),
			MetricsAddr: "127.0.0.1:0",
			MetricsServing: manager.MetricsServingOptions{
				SecureServing: true, AllowCacheTTL: ttl, DenyCacheTTL: ttl,
			},
		})
		require.NoError(t, err)
		stop := manager.StartManager(t, ctx, mgr)
		t.Cleanup(func() { assert.NoError(t, stop()) })
		require.Eventually(t, func() bool { return mgr.MetricsAddr() != "" }, apiWait, 10*time.Millisecond)
		return "https://" + mgr.MetricsAddr() + "/metrics"
	}
	transport := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // self-signed on purpose
	defer transport.CloseIdleConnections()
	hc := &http.Client{Transport: transport, Timeout: apiWait}
	get := func(url, token string) int {
		t.Helper()
		resp, _ := delegatedauthtest.Get(t, hc, url, token)
		return resp.StatusCode
	}
	url := start(clientAs(managerToken))

	assert.Equal(t, http.StatusUnauthorized, get(url, ""))
	assert.Equal(t, http.StatusUnauthorized, get(url, "not-a-token"))
	assert.Equal(t, http.StatusForbidden, get(url, scraperToken), "authenticated, not authorized")

	_, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	bind("prometheus-metrics-reader", "metrics-reader", "prometheus")
	require.Eventually(t, func() bool { return get(url, scraperToken) == http.StatusOK }, apiWait, 50*time.Millisecond,
		"the grant is seen once the cached denial expired")

	require.NoError(t, admin.RbacV1().ClusterRoleBindings().Delete(ctx, "prometheus-metrics-reader", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return get(url, scraperToken) == http.StatusForbidden }, apiWait, 50*time.Millisecond,
		"the revocation is seen once the cached decision expired")

	// A Manager whose identity may not create TokenReviews cannot decide: 500, not 401.
	assert.Equal(t, http.StatusInternalServerError, get(start(clientAs(scraperToken)), scraperToken))
}
