package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/ctrlkit/ctrlkit/examples/configmap-propagator/propagator"
	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// These tests run the binary's controllers against a real kube-apiserver
// (testkit.SharedAPIServer: skipped with -short or without the binaries, see
// `make kube`): the propagator's creates, updates (optimistic concurrency on a cached
// resourceVersion) and UID-preconditioned deletes, and the pod-counter's merge patches, as the
// real server applies them. Namespaces are cluster-scoped, so each test labels its own with a
// value of its own and points the source's selector at it.

func targetNamespace(t *testing.T, env *testkit.Env, name string, lbls map[string]string) {
	t.Helper()
	_, err := env.Client().CoreV1().Namespaces().Create(env.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Client().CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

func copyData(t *testing.T, env *testkit.Env, ns, name string) map[string]string {
	t.Helper()
	cm, err := env.Client().CoreV1().ConfigMaps(ns).Get(env.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return cm.Data
}

func TestAPIServerControllers(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	src := env.Namespace()
	mine := map[string]string{"ctrlkit.dev/test-run": src}
	a, b := src+"-a", src+"-b"
	targetNamespace(t, env, a, mine)
	targetNamespace(t, env, b, mine)
	_, err := env.Client().CoreV1().ConfigMaps(src).Create(env.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings", Labels: map[string]string{propagator.LabelPropagate: "true"},
			Annotations: map[string]string{propagator.AnnotationTargets: "ctrlkit.dev/test-run=" + src}},
		Data: map[string]string{"region": "eu"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	var o options
	s, err := demo.Parse(program(&o), []string{"--leader-elect=false", "--metrics-addr=", "--health-addr=",
		"--feature-gates=PodCounter=true", "--source-namespace=" + src}, &bytes.Buffer{})
	require.NoError(t, err)
	mgr, err := manager.New(manager.Options{Client: env.Client(), FeatureGate: s.Gate})
	require.NoError(t, err)
	names, err := addControllers(env.Context(), &demo.Env{Client: env.Client(), Manager: mgr, Gate: s.Gate, Workers: s.Workers}, &o)
	require.NoError(t, err)
	require.Len(t, names, 2)
	ctx, cancel := context.WithCancel(env.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()

	eventually := func(what string, cond func() bool) {
		t.Helper()
		require.Eventually(t, cond, 60*time.Second, 20*time.Millisecond, what)
	}
	eventually("copies created", func() bool {
		return copyData(t, env, a, "settings")["region"] == "eu" && copyData(t, env, b, "settings")["region"] == "eu"
	})

	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := env.Client().CoreV1().ConfigMaps(src).Get(env.Context(), "settings", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm.Data["region"] = "us"
		_, err = env.Client().CoreV1().ConfigMaps(src).Update(env.Context(), cm, metav1.UpdateOptions{})
		return err
	}))
	eventually("copies updated", func() bool {
		return copyData(t, env, a, "settings")["region"] == "us" && copyData(t, env, b, "settings")["region"] == "us"
	})

	ns, err := env.Client().CoreV1().Namespaces().Get(env.Context(), b, metav1.GetOptions{})
	require.NoError(t, err)
	ns.Labels = nil
	_, err = env.Client().CoreV1().Namespaces().Update(env.Context(), ns, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually("copy removed from the unlabelled namespace", func() bool { return copyData(t, env, b, "settings") == nil })
	assert.Equal(t, "us", copyData(t, env, a, "settings")["region"])

	_, err = env.Client().CoreV1().Pods(a).Create(env.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	eventually("pods counted through a merge patch", func() bool {
		ns, err := env.Client().CoreV1().Namespaces().Get(env.Context(), a, metav1.GetOptions{})
		require.NoError(t, err)
		return ns.Annotations[AnnotationPodCount] == "1"
	})
}

// The binary itself, with --kubeconfig: it propagates on the API server until its context ends,
// behind a Lease there, and exits 0.
func TestAPIServerRunWithKubeconfig(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	src := env.Namespace()
	target := src + "-t"
	targetNamespace(t, env, target, map[string]string{"ctrlkit.dev/test-run": src})
	_, err := env.Client().CoreV1().ConfigMaps(src).Create(env.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings", Labels: map[string]string{propagator.LabelPropagate: "true"},
			Annotations: map[string]string{propagator.AnnotationTargets: "ctrlkit.dev/test-run=" + src}},
		Data: map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, demo.WriteKubeconfig(path, env.Config()))

	ctx, cancel := context.WithCancel(env.Context())
	defer cancel()
	var out rbactest.LogBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--kubeconfig", path, "--source-namespace", src, "--metrics-addr=127.0.0.1:0",
			"--health-addr=127.0.0.1:0", "--leader-elect-resource-namespace", src}, &out)
	}()
	require.Eventually(t, func() bool { return copyData(t, env, target, "settings")["k"] == "v" },
		60*time.Second, 20*time.Millisecond, "no copy: %s", &out)
	_, err = env.Client().CoordinationV1().Leases(src).Get(env.Context(), "ctrlkit-multi-controller", metav1.GetOptions{})
	require.NoError(t, err, "it led through a Lease on the API server")

	cancel()
	select {
	case code := <-done:
		assert.Equal(t, 0, code, out.String())
	case <-time.After(time.Minute):
		t.Fatal("run did not return after its context ended")
	}
}
