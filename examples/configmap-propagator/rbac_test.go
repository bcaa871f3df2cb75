package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/ctrlkit/ctrlkit/examples/configmap-propagator/propagator"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// The shipped manifests are least privilege, proven on a real API server: with deploy/rbac.yaml
// and a token of its ServiceAccount as its only credentials, the binary (run with the
// Deployment's arguments: the source namespace is its own) copies a source ConfigMap into a
// target namespace; with "create configmaps" taken away, a new target makes it log the refusal,
// naming verb and resource, and retry rather than exit; given back, the copy appears, and
// updates and deletes of copies go through too.
//
// Namespaces are cluster-scoped: the test's targets carry a label of their own, which the
// source selects.
func TestAPIServerLeastPrivilege(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	in := rbactest.ApplyFiles(t, env, "deploy/rbac.yaml", "deploy/deployment.yaml", "deploy/metrics-reader.yaml")
	ctx, src, client := env.Context(), env.Namespace(), env.Client()
	mine := map[string]string{"ctrlkit.dev/test-run": src}
	target := func(name string) {
		_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: mine}}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	copied := func(ns, region string) {
		t.Helper()
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil && cm.Data["region"] == region && cm.Annotations[propagator.AnnotationSource] == src+"/settings", err
		}), "the copy in %s", ns)
	}
	target(src + "-a")
	_, err := client.CoreV1().ConfigMaps(src).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings", Labels: map[string]string{propagator.LabelPropagate: "true"},
			Annotations: map[string]string{propagator.AnnotationTargets: "ctrlkit.dev/test-run=" + src}},
		Data: map[string]string{"region": "eu"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	p := in.Start(run)
	copied(src+"-a", "eu")
	p.AwaitProbes()
	rbactest.CheckMetricsAccess(p, in, "ctrlkit-configmap-propagator-metrics-reader")

	create := rbactest.Access{Verb: "create", Resource: "configmaps"}
	restore := in.Revoke("ClusterRole", "ctrlkit-configmap-propagator", create)
	target(src + "-b")
	line := p.AwaitForbidden(in, create, 2)
	assert.Contains(t, line, `"Reconcile failed; retrying with backoff"`)

	restore()
	copied(src+"-b", "eu")

	// An edit of the source updates the copies; a target that loses its label loses its copy.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := client.CoreV1().ConfigMaps(src).Get(ctx, "settings", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm.Data["region"] = "us"
		_, err = client.CoreV1().ConfigMaps(src).Update(ctx, cm, metav1.UpdateOptions{})
		return err
	}))
	copied(src+"-a", "us")
	_, err = client.CoreV1().Namespaces().Patch(ctx, src+"-a", types.MergePatchType, []byte(`{"metadata":{"labels":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ConfigMaps(src+"-a").Get(ctx, "settings", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}), "the copy in the unlabelled namespace is deleted")
	assert.Equal(t, 0, p.Stop(), "a clean exit when interrupted")
}
