package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/examples/internal/kubelet"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// An operator's Role mistake, black box: the binary runs with the shipped RBAC and the
// Deployment's arguments and leads; then "update leases" is taken from its Role. It cannot
// renew, loses the Lease after its renew deadline and contends again, refused; all along its
// /readyz answers 200 (a replica whose readiness a Lease error took away would take its
// webhooks' endpoints with it, on every replica at once), while /readyz?verbose names the
// Lease and the refusal and the log says it once. Given the rule back, the line clears and the
// binary leads and reconciles again.
func TestAPIServerReadyThroughARefusedLease(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	in := rbactest.ApplyFiles(t, env, "deploy/rbac.yaml", "deploy/deployment.yaml")
	ns, client := env.Namespace(), env.Client()
	k, err := kubelet.New(client, kubelet.Options{Namespace: ns, StartupDelay: -1}) // the test plays the kubelet
	require.NoError(t, err)
	env.RunController(env.Context(), k)
	p := in.Start(run)
	_, err = client.AppsV1().ReplicaSets(ns).Create(env.Context(), replicaSet(ns, "web", "", 1), metav1.CreateOptions{})
	require.NoError(t, err)
	awaitConverged(t, client, ns, "web", 1)
	p.AwaitProbes()
	lease := ns + "/ctrlkit-replicaset-controller"

	update := rbactest.Access{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: "ctrlkit-replicaset-controller"}
	restore := in.Revoke("Role", "ctrlkit-replicaset-leader-election", update)
	body := p.AwaitProbe("/readyz?verbose", http.StatusOK, "[+]leaderelection ok, but: cannot update lease "+lease+": ")
	assert.Contains(t, body, rbactest.ForbiddenMessage(in.User, "update", "leases", "coordination.k8s.io"))
	// Through the renew deadline (10 s by default), the lost Lease and the campaign after it,
	// the probe a kubelet sends every 10 s passes at every ask.
	require.Eventually(t, func() bool {
		code, body := p.Probe("/readyz")
		require.Equal(t, http.StatusOK, code, "/readyz during the refusal: %s", body)
		return strings.Contains(p.Output(), `"Lost the lease`)
	}, 60*time.Second, 100*time.Millisecond, "the leader loses the Lease it cannot renew")
	for range 20 { // and while it contends again, refused
		code, body := p.Probe("/readyz?verbose")
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, "[+]leaderelection ok, but: cannot update lease "+lease+": ")
		time.Sleep(100 * time.Millisecond) // spaced asks, not a wait for a state
	}
	// Logged when it begins, not at every retry nor again in the campaign after the lost Lease.
	assert.Equal(t, 1, strings.Count(p.Output(), `"The API server refuses this replica its lease`), "%s", p.Output())

	restore()
	p.AwaitProbe("/readyz?verbose", http.StatusOK, "[+]leaderelection ok\n")
	require.Eventually(t, func() bool { return strings.Count(p.Output(), `"Started leading`) == 2 },
		60*time.Second, 50*time.Millisecond, "the binary leads again")
	assert.Contains(t, p.Output(), `"The lease is accessible again"`)
	_, err = client.AppsV1().ReplicaSets(ns).Create(env.Context(), replicaSet(ns, "after", "", 2), metav1.CreateOptions{})
	require.NoError(t, err)
	awaitConverged(t, client, ns, "after", 2)
	assert.Equal(t, 0, p.Stop(), "a clean exit when interrupted")
}
