package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// An operator's outage, black box: the binary runs with its default flags against an API
// server whose packets are then dropped (testkit.Outage). It says so in its log within
// its probe interval, says when the server answers again, and then reconciles the change made
// meanwhile. A SIGTERM during a second outage ends it cleanly, and its log says what the
// shutdown waited for: the controllers' in-flight reconciles and the bounded lease release.
func TestAPIServerOutageIsLoggedAndShutdownEnds(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ns := env.Namespace()
	outage := testkit.NewOutage(t, env.Config())
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, demo.WriteKubeconfig(path, outage.Config()))
	ctx, cancel := context.WithCancel(env.Context())
	defer cancel()
	var out rbactest.LogBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--kubeconfig=" + path, "--metrics-addr=", "--health-addr=127.0.0.1:0",
			"--leader-elect-resource-namespace=" + ns, "--leader-elect-resource-name=rs-" + ns}, &out)
	}()
	logged := func(what string) func() bool {
		return func() bool { return strings.Contains(out.String(), what) }
	}
	pods := func(n int) func() bool {
		return func() bool {
			list, err := env.Client().CoreV1().Pods(ns).List(env.Context(), metav1.ListOptions{})
			require.NoError(t, err)
			return len(list.Items) == n
		}
	}
	_, err := env.Client().AppsV1().ReplicaSets(ns).Create(env.Context(), replicaSet(ns, "api", "", 2), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, pods(2), 60*time.Second, 50*time.Millisecond, "the binary created the Pods: %s", &out)

	outage.Cut()
	require.Eventually(t, logged(`"The API server does not answer`), 30*time.Second, 50*time.Millisecond, "%s", &out)
	// Scaled while the binary cannot see it.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rs, err := env.Client().AppsV1().ReplicaSets(ns).Get(env.Context(), "api", metav1.GetOptions{})
		if err != nil {
			return err
		}
		rs.Spec.Replicas = ptr.To[int32](3)
		_, err = env.Client().AppsV1().ReplicaSets(ns).Update(env.Context(), rs, metav1.UpdateOptions{})
		return err
	}))
	outage.Restore()
	require.Eventually(t, logged(`"The API server answers again"`), 30*time.Second, 50*time.Millisecond, "%s", &out)
	require.Eventually(t, pods(3), 60*time.Second, 50*time.Millisecond, "the binary reconciled the change made during the outage: %s", &out)

	outage.Cut()
	require.Eventually(t, logged(`"The API server does not answer`), 30*time.Second, 50*time.Millisecond, "%s", &out)
	cancel()
	select {
	case code := <-done:
		assert.Equal(t, 0, code, "%s", &out)
	case <-time.After(60 * time.Second):
		t.Fatalf("the binary did not exit after SIGTERM during an outage: %s", &out)
	}
	for _, line := range []string{`"Shutting down"`, `"Waiting for the controllers to finish their in-flight reconciles"`, `"Manager stopped"`} {
		assert.Contains(t, out.String(), line)
	}
	if strings.Count(out.String(), `"Started leading`) > strings.Count(out.String(), `"Lost the lease`) {
		assert.Contains(t, out.String(), `"Releasing the lease"`, "a leader says it waits for the release")
	}
}
