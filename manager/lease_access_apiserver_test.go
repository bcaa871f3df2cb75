package manager_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/leaderelection"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// A replica whose RBAC does not let it at its Lease says so on /readyz, asked over HTTP as a
// kubelet asks, naming the Lease, the verb and the API server's refusal, while /healthz passes.
// Allowed only to read a Lease another process holds, it is a ready standby; once that Lease is
// released and it may not take it over, it stays ready (a refusal takes readiness from no
// replica that has been ready) and says so on /readyz?verbose and in
// ctrlkit_leader_election_lease_refused; given the rule, it leads and the line clears. The
// replica runs as a user of its own (impersonated) whose Role the test grows.
func testLeaseAccess(t *testing.T, env *testkit.Env) {
	cl := newCluster(t, env)
	ctx := t.Context()
	const user, leaseName = "ctrlkit-lease-tester", "ctrlkit-lease-access"
	lease := cl.namespace + "/" + leaseName
	leases := cl.client.CoordinationV1().Leases(cl.namespace)
	_, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: leaseName},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("another-process"), LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime: &metav1.MicroTime{Time: time.Now()}, RenewTime: &metav1.MicroTime{Time: time.Now()}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	cfg := rest.CopyConfig(env.Config())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	mgr, err := manager.New(manager.Options{
		Client:          newClient(t, cfg),
		Logger:          ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2))),
		HealthProbeAddr: "127.0.0.1:0",
		LeaderElection: &leaderelection.Config{
			Enabled: true, Namespace: cl.namespace, Name: leaseName, Identity: "replica-x",
			LeaseDuration: apiLeaseDuration, RenewDeadline: apiRenewDeadline, RetryPeriod: apiRetryPeriod,
		},
	})
	require.NoError(t, err)
	stop := manager.StartManager(t, context.Background(), mgr)
	t.Cleanup(func() { assert.NoError(t, stop(), "Start") })
	waitUntil(t, apiWait, func() bool { return mgr.HealthProbeAddr() != "" }, "the probes are served")
	probes := &http.Client{Timeout: 5 * time.Second}
	t.Cleanup(probes.CloseIdleConnections)
	get := func(path string) (int, string) {
		resp, err := probes.Get("http://" + mgr.HealthProbeAddr() + path)
		if err != nil {
			return 0, err.Error()
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	refused := func(verb string) string {
		t.Helper()
		var code int
		var body string
		waitUntil(t, apiWait, func() bool {
			code, body = get("/readyz")
			return code == http.StatusServiceUnavailable && strings.Contains(body, "cannot "+verb+" lease")
		}, fmt.Sprintf("/readyz says the replica cannot %s its Lease (last: %d %s)", verb, code, body))
		assert.Contains(t, body, "leaderelection: cannot "+verb+" lease "+lease+": ")
		assert.Contains(t, body, fmt.Sprintf(`User %q cannot %s resource "leases" in API group "coordination.k8s.io" in the namespace %q`,
			user, verb, cl.namespace))
		code, _ = get("/healthz")
		assert.Equal(t, http.StatusOK, code, "/healthz passes: a restart would not help")
		assert.False(t, mgr.Elector().IsLeader())
		return body
	}
	ready := func(what string) {
		t.Helper()
		var code int
		var body string
		waitUntil(t, apiWait, func() bool { code, body = get("/readyz"); return code == http.StatusOK },
			fmt.Sprintf("%s (last: %d %s)", what, code, body))
	}

	holder := func() string {
		t.Helper()
		l, err := leases.Get(ctx, leaseName, metav1.GetOptions{})
		require.NoError(t, err)
		return ptr.Deref(l.Spec.HolderIdentity, "")
	}

	refused("get")

	grant(t, cl, user, "lease-reader", rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"},
		Resources: []string{"leases"}, ResourceNames: []string{leaseName}, Verbs: []string{"get"}})
	ready("a standby that reads the Lease another process holds is ready")
	assert.False(t, mgr.Elector().IsLeader())
	assert.Equal(t, "another-process", holder())

	// The holder releases the Lease; this replica may not take it.
	l, err := leases.Get(ctx, leaseName, metav1.GetOptions{})
	require.NoError(t, err)
	l.Spec.HolderIdentity = nil
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	require.NoError(t, err)
	var code int
	var body string
	waitUntil(t, apiWait, func() bool {
		code, body = get("/readyz?verbose")
		return strings.Contains(body, "[+]leaderelection ok, but: cannot update lease "+lease+": ")
	}, fmt.Sprintf("/readyz?verbose names the refused update while ready (last: %d %s)", code, body))
	assert.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, fmt.Sprintf(`User %q cannot update resource "leases"`, user))
	code, body = get("/readyz")
	assert.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, 1.0, leaseRefused(t, mgr))

	grant(t, cl, user, "lease-writer", rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"},
		Resources: []string{"leases"}, ResourceNames: []string{leaseName}, Verbs: []string{"update"}})
	waitUntil(t, apiWait, mgr.Elector().IsLeader, "the replica leads once it may update its Lease")
	ready("the leader is ready")
	assert.Equal(t, "replica-x", holder())
	code, body = get("/readyz?verbose")
	assert.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "[+]leaderelection ok\n")
	assert.Equal(t, 0.0, leaseRefused(t, mgr))
}

// leaseRefused is mgr's ctrlkit_leader_election_lease_refused, -1 when absent.
func leaseRefused(t *testing.T, mgr *manager.Manager) float64 {
	t.Helper()
	families, err := mgr.Gatherer().Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == "ctrlkit_leader_election_lease_refused" && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

// grant binds a Role with rule to user in cl's namespace.
func grant(t *testing.T, cl *cluster, user, name string, rule rbacv1.PolicyRule) {
	t.Helper()
	rbac := cl.client.RbacV1()
	_, err := rbac.Roles(cl.namespace).Create(t.Context(), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{rule}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = rbac.RoleBindings(cl.namespace).Create(t.Context(), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}, metav1.CreateOptions{})
	require.NoError(t, err)
}
