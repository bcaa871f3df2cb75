package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/leaderelection"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// `go run ./examples/replicaset --kubeconfig <a fresh cluster>` from a laptop: the Lease
// namespace defaults to ctrlkit-system, which a fresh cluster does not have. The binary exits
// 2 at once naming the flag and the namespace (it used to retry `namespaces "ctrlkit-system"
// not found` for ever); sharded, it names the ring's flag. Once the namespace exists, it
// reconciles.
func TestAPIServerMissingLeaseNamespace(t *testing.T) {
	t.Setenv(leaderelection.PodNamespaceEnv, "")
	env := testkit.NewAPIServer(t)
	_, err := env.Client().CoreV1().Namespaces().Get(env.Context(), leaderelection.DefaultNamespace, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "a fresh API server has no %s: %v", leaderelection.DefaultNamespace, err)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, demo.WriteKubeconfig(path, env.Config()))
	args := []string{"--kubeconfig=" + path, "--metrics-addr=127.0.0.1:0", "--health-addr=127.0.0.1:0"}

	for name, tc := range map[string]struct {
		args []string
		flag string
	}{
		"elected": {nil, "--leader-elect-resource-namespace"},
		"sharded": {[]string{"--sharded", "--shard-identity=replica-1"}, "--shard-namespace"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(env.Context(), time.Minute)
			defer cancel()
			var out rbactest.LogBuffer
			code := run(ctx, append(append([]string{}, args...), tc.args...), &out)
			require.NoError(t, ctx.Err(), "it did not exit at once: %s", &out)
			assert.Equal(t, demo.ExitBadArgs, code, out.String())
			assert.Contains(t, out.String(), tc.flag)
			assert.Contains(t, out.String(), leaderelection.DefaultNamespace)
		})
	}

	_, err = env.Client().CoreV1().Namespaces().Create(env.Context(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaderelection.DefaultNamespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	ns := env.Namespace()
	ctx, cancel := context.WithCancel(env.Context())
	defer cancel()
	var out rbactest.LogBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, &out) }()
	_, err = env.Client().AppsV1().ReplicaSets(ns).Create(env.Context(), replicaSet(ns, "api", "", 2), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		pods, err := env.Client().CoreV1().Pods(ns).List(env.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		return len(pods.Items) == 2
	}, time.Minute, 50*time.Millisecond, "the binary reconciles once the namespace exists: %s", &out)
	cancel()
	select {
	case code := <-done:
		assert.Equal(t, demo.ExitOK, code, out.String())
	case <-time.After(time.Minute):
		t.Fatal("run did not return after its context ended")
	}
}
