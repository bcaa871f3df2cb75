package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/internal/kubelet"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// The shipped manifests are least privilege, proven on a real API server: with the CRD
// installed by the admin and deploy/rbac.yaml, the binary (run with the Deployment's arguments
// and a token of its ServiceAccount as its only credentials) finds its CRD and converges the
// sample PodSet; with "update podsets/status" taken away it logs the refusal, naming verb and
// subresource, and retries rather than exits; given back, it converges, and its finalizer lets
// a deleted PodSet go. Without the right to
// read its CRD it cannot start, and exits saying why.
func TestAPIServerLeastPrivilege(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	in := rbactest.ApplyFiles(t, env, "deploy/rbac.yaml", "deploy/deployment.yaml", "deploy/metrics-reader.yaml")
	ctx, ns := env.Context(), env.Namespace()
	require.NoError(t, customresource.EnsureCRDFromYAML(ctx, env.Dynamic(), v1alpha1.CRDManifest), "the admin installs the CRD")

	k, err := kubelet.New(env.Client(), kubelet.Options{Namespace: ns, StartupDelay: -1})
	require.NoError(t, err)
	env.RunController(ctx, k)
	crs, err := customresource.NewClient[*v1alpha1.PodSet](env.Dynamic(), v1alpha1.GVR)
	require.NoError(t, err)

	p := in.Start(run, "-v=2")
	sample := loadSample(t)
	sample.Namespace = ns
	_, err = crs.Create(ctx, sample, metav1.CreateOptions{})
	require.NoError(t, err)
	converged := func(n int32) {
		t.Helper()
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			ps, err := crs.Get(ctx, ns, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			st := ps.Status
			return st.Replicas == n && st.ReadyReplicas == n && st.ObservedGeneration == ps.Generation &&
				meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionAvailable), nil
		}), "%d ready replicas in status", n)
	}
	converged(3)
	p.AwaitProbes()
	leaderEvent := rbactest.Access{Verb: "create", Group: "events.k8s.io", Resource: "events"}
	assert.Empty(t, p.ForbiddenLines(in, leaderEvent), "the leader election's event on the Lease is allowed")
	rbactest.CheckMetricsAccess(p, in, "ctrlkit-podset-metrics-reader")
	assert.Contains(t, p.Output(), `"PodSet CRD is served"`)

	status := rbactest.Access{Verb: "update", Group: v1alpha1.GroupName, Resource: v1alpha1.Plural, Subresource: "status"}
	restore := in.Revoke("ClusterRole", "ctrlkit-podset", status)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ps, err := crs.Get(ctx, ns, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		ps.Spec.Replicas = ptr.To[int32](1)
		_, err = crs.Update(ctx, ps, metav1.UpdateOptions{})
		return err
	}))
	line := p.AwaitForbidden(in, status, 2)
	assert.Contains(t, line, `"Reconcile failed; retrying with backoff"`)

	restore()
	converged(1)
	// Deleting the PodSet: the controller's finalizer removes its record, then itself (a patch).
	require.NoError(t, crs.Delete(ctx, ns, "web", metav1.DeleteOptions{}))
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := crs.Get(ctx, ns, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}), "the PodSet is gone once its finalizer ran")
	assert.Equal(t, 0, p.Stop(), "a clean exit when interrupted")

	// A right the binary needs before it can start (reading its CRD) is a startup failure:
	// exit 1 with the refusal in the log, which a Pod shows in CrashLoopBackOff.
	crd := rbactest.Access{Verb: "get", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: v1alpha1.CRDName, ClusterScoped: true}
	in.Revoke("ClusterRole", "ctrlkit-podset", crd)
	p = in.Start(run)
	assert.Equal(t, 1, p.Wait())
	require.Len(t, p.ForbiddenLines(in, crd), 1, "the refusal is logged once, as the reason of the exit")
	assert.Contains(t, p.ForbiddenLines(in, crd)[0], `"Exiting"`)
}
