package main

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/internal/kubelet"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// What an operator sees of the binary started before its CRD is installed (--install-crd=false,
// the shipped RBAC): it runs, /healthz is ok and /readyz names the CRD it waits for; applying the
// CRD starts the PodSet controller, which converges a PodSet within seconds; deleting the CRD
// (the API server deletes the PodSets first, their finalizer run by the controller) stops the
// controller while the process stays up and healthy, with a few log lines; applying the CRD
// again starts it again. Its own API server: the CRD is cluster-wide.
func TestAPIServerWaitsForItsCRD(t *testing.T) {
	env := testkit.NewAPIServer(t)
	in := rbactest.ApplyFiles(t, env, "deploy/rbac.yaml", "deploy/deployment.yaml")
	ctx, ns := env.Context(), env.Namespace()
	k, err := kubelet.New(env.Client(), kubelet.Options{Namespace: ns, StartupDelay: -1})
	require.NoError(t, err)
	env.RunController(ctx, k)
	crs, err := customresource.NewClient[*v1alpha1.PodSet](env.Dynamic(), v1alpha1.GVR)
	require.NoError(t, err)

	p := in.Start(run, "--install-crd=false")
	p.AwaitProbe("/healthz", http.StatusOK, "ok")
	p.AwaitProbe("/readyz", http.StatusServiceUnavailable,
		"podset (waiting for podsets.examples.ctrlkit.dev/v1alpha1: no CRD podsets.examples.ctrlkit.dev and not served)")

	converged := func(name string, n int32, within time.Duration) {
		t.Helper()
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
			ps, err := crs.Get(ctx, ns, name, metav1.GetOptions{})
			if err != nil {
				return false, nil // the CRD may not be served yet
			}
			st := ps.Status
			return st.ReadyReplicas == n && st.ObservedGeneration == ps.Generation &&
				meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionAvailable), nil
		}), "PodSet %s: %d ready replicas in status within %v", name, n, within)
	}
	install := func(name string) {
		t.Helper()
		require.NoError(t, customresource.EnsureCRDFromYAML(ctx, env.Dynamic(), v1alpha1.CRDManifest), "kubectl apply of the CRD")
		sample := loadSample(t)
		sample.Namespace, sample.Name = ns, name
		_, err := crs.Create(ctx, sample, metav1.CreateOptions{})
		require.NoError(t, err)
		converged(name, 3, 10*time.Second)
		p.AwaitProbe("/readyz", http.StatusOK, "ok")
	}

	install("first")
	p.AwaitLog(regexp.MustCompile(`"Resources served: started"`))

	// kubectl delete crd: the API server deletes the PodSet, whose finalizer the controller
	// removes, then the CRD.
	logBefore := len(p.Output())
	require.NoError(t, env.Dynamic().Resource(customresource.CRDResource).Delete(ctx, v1alpha1.CRDName, metav1.DeleteOptions{}))
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := env.Dynamic().Resource(customresource.CRDResource).Get(ctx, v1alpha1.CRDName, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}), "the CRD is gone: its PodSet's finalizer ran")
	p.AwaitProbe("/readyz", http.StatusServiceUnavailable, "podset (waiting for podsets.examples.ctrlkit.dev/v1alpha1: CRD podsets.examples.ctrlkit.dev was deleted)")
	p.AwaitProbe("/healthz", http.StatusOK, "ok")
	_, exited := p.Exited()
	require.False(t, exited, "the process stays up")

	install("second")
	assert.Equal(t, 0, p.Stop(), "a clean exit when interrupted")
	var errorLines []string
	for _, line := range strings.Split(p.Output()[logBefore:], "\n") {
		if strings.HasPrefix(line, "E") {
			errorLines = append(errorLines, line)
		}
	}
	t.Logf("%d error lines from the CRD's deletion on:\n%s", len(errorLines), strings.Join(errorLines, "\n"))
	assert.LessOrEqual(t, len(errorLines), 5, "a few error lines at most from the CRD's deletion on:\n%s", strings.Join(errorLines, "\n"))
}
