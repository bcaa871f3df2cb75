package main

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1beta1"
	"github.com/ctrlkit/ctrlkit/examples/podset/podsetwebhook"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// freePort returns a loopback port nobody listened on a moment ago: the API server must know
// the webhook's URL before the binary listens.
func freePort(t *testing.T) string {
	t.Helper()
	return freePorts(t, 1)[0]
}

// freePorts returns n distinct such ports: they are held open together while chosen, so that
// two calls cannot hand out the same port (one released a moment before the other asks).
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	addrs := make([]string, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs
}

// The binary with --webhook-addr and --webhook-url serves the webhooks and installs their
// configurations and the two-version CRD with its own throw-away CA as caBundle: an invalid
// PodSet is refused, a v1beta1 PodSet is defaulted and reads as v1alpha1, and the controller
// runs its Pods. Its own API server: the binary changes the cluster-scoped CRD.
func TestRunServesAndInstallsItsWebhooks(t *testing.T) {
	env := testkit.NewAPIServer(t)
	ctx, ns := env.Context(), env.Namespace()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, demo.WriteKubeconfig(kubeconfig, env.Config()))
	addr := freePort(t)

	runCtx, cancel := context.WithCancel(ctx)
	out := &rbactest.LogBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(runCtx, []string{"--kubeconfig", kubeconfig, "--namespace", ns, "--leader-elect-resource-namespace", ns, "-v", "2",
			"--health-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0",
			"--webhook-addr", addr, "--webhook-url", "https://" + addr}, out)
	}()
	defer func() {
		cancel()
		assert.Equal(t, 0, <-done)
		if t.Failed() {
			t.Log(out.String())
		}
	}()
	alpha, err := customresource.NewClient[*v1alpha1.PodSet](env.Dynamic(), v1alpha1.GVR)
	require.NoError(t, err)
	beta, err := customresource.NewClient[*v1beta1.PodSet](env.Dynamic(), v1beta1.GVR)
	require.NoError(t, err)
	poll := func(what string, cond func(context.Context) (bool, error)) {
		t.Helper()
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, cond), what)
	}

	bad := webPodSet(1)
	bad.Namespace = ns
	bad.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	var refusal error
	poll("the binary's validating webhook refuses a PodSet whose selector misses its template", func(ctx context.Context) (bool, error) {
		_, refusal = alpha.Create(ctx, bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(refusal) && strings.Contains(refusal.Error(), `selector "app=db" does not match the template's labels`), nil
	})

	in := &v1beta1.PodSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: v1beta1.PodSetSpec{
			Scale: &v1beta1.ScaleSpec{Replicas: 2},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}
	poll("a v1beta1 PodSet is converted, defaulted and admitted", func(ctx context.Context) (bool, error) {
		_, err := beta.Create(ctx, in, metav1.CreateOptions{})
		return err == nil, nil
	})
	ps, err := alpha.Get(ctx, ns, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(2), ps.Spec.DesiredReplicas())
	assert.Equal(t, map[string]string{"app": "web"}, ps.Spec.Selector.MatchLabels)
	assert.Equal(t, podsetwebhook.ManagedBy, ps.Labels[podsetwebhook.ManagedByLabel])
	poll("the controller runs 2 Pods for it", func(ctx context.Context) (bool, error) {
		ps, err := beta.Get(ctx, ns, "web", metav1.GetOptions{})
		return err == nil && ps.Status.Replicas == 2, nil
	})
	assert.Contains(t, out.String(), `"PodSet webhooks installed"`)

	// docs/examples.md's patch names the version: the same merge patch through v1beta1 (what a bare
	// "kubectl patch podset" uses once this CRD is installed) is pruned as unknown and changes
	// nothing, through v1alpha1 it scales.
	patch := []byte(`{"spec":{"replicas":5}}`)
	_, err = env.Dynamic().Resource(v1beta1.GVR).Namespace(ns).Patch(ctx, "web", types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
	ps, err = alpha.Get(ctx, ns, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(2), ps.Spec.DesiredReplicas(), "spec.replicas through v1beta1 is pruned")
	_, err = env.Dynamic().Resource(v1alpha1.GVR).Namespace(ns).Patch(ctx, "web", types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
	poll("the patch through v1alpha1 scales the PodSet to 5", func(ctx context.Context) (bool, error) {
		ps, err := beta.Get(ctx, ns, "web", metav1.GetOptions{})
		return err == nil && ps.Spec.Scale != nil && ps.Spec.Scale.Replicas == 5 && ps.Status.Replicas == 5, nil
	})
}
