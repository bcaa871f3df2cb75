package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/examples/fleet-policy/fleetpolicy"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/multicluster"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// The shipped manifests are least privilege, proven on two real API servers: with
// deploy/rbac.yaml on the hub and a token of its ServiceAccount as the binary's only credentials
// there (run with the Deployment's arguments: the source and the Secrets are in its namespace),
// and deploy/member-rbac.yaml on a member whose kubeconfig Secret holds a token of the member's
// ServiceAccount, the binary keeps the baseline in the member's labelled Namespaces; with
// "create configmaps" taken away in the member, a new labelled Namespace makes it log the
// refusal, naming the member's user, verb and resource, and retry rather than exit; given back,
// the copy appears.
func TestAPIServerLeastPrivilege(t *testing.T) {
	hub := testkit.NewAPIServer(t)
	member := testkit.NewAPIServer(t)
	in := rbactest.ApplyFiles(t, hub, "deploy/rbac.yaml", "deploy/deployment.yaml", "deploy/metrics-reader.yaml")
	m, err := rbactest.LoadRBAC("deploy/member-rbac.yaml")
	require.NoError(t, err)
	mem := rbactest.Apply(t, member, m)
	ctx, ns := hub.Context(), hub.Namespace()

	_, err = hub.Client().CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fleetpolicy.DefaultName},
		Data: map[string]string{"policy": "deny-all"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	kubeconfig, err := os.ReadFile(mem.Kubeconfig)
	require.NoError(t, err)
	_, err = hub.Client().CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "member"},
		Data: map[string][]byte{multicluster.DefaultSecretKey: kubeconfig}}, metav1.CreateOptions{})
	require.NoError(t, err)
	target := func(name string) {
		_, err := member.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{fleetpolicy.LabelBaseline: "true"}}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	copied := func(client kubernetes.Interface, namespace string) {
		t.Helper()
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			cm, err := client.CoreV1().ConfigMaps(namespace).Get(ctx, fleetpolicy.DefaultName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil && cm.Data["policy"] == "deny-all", err
		}), "the baseline in %s", namespace)
	}
	target("team-a")

	p := in.Start(run)
	copied(member.Client(), "team-a")
	p.AwaitProbes()
	rbactest.CheckMetricsAccess(p, in, "ctrlkit-fleet-policy-metrics-reader")

	create := rbactest.Access{Verb: "create", Resource: "configmaps"}
	restore := mem.Revoke("ClusterRole", "ctrlkit-fleet-policy-member", create)
	target("team-b")
	line := p.AwaitForbidden(mem, create, 2)
	assert.Contains(t, line, `"Reconcile failed; retrying with backoff"`)
	assert.Contains(t, line, `key="member/team-b"`, "the key names the cluster")

	restore()
	copied(member.Client(), "team-b")
	assert.Equal(t, 0, p.Stop(), "a clean exit when interrupted")
}
