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
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// An operator's outage after which the network has forgotten the connections (a load
// balancer's or NAT's flows lost, as in a failover), black box: the binary runs against an API
// server whose packets are dropped for 25 s; the ReplicaSet is scaled meanwhile; when the
// packets flow again, the connections open before the outage stay dead (testkit's
// Outage.Drop), as they do on a real network. The change is reconciled within 10 s of the
// restore: the Manager's probe, on connections of its own, sees the server answer again and
// closes the clients' connections, so the informers re-watch at once. Without that they waited
// for HTTP/2's health check on the dead connection (30 s without a frame, then a 15 s ping) and
// the reflectors' backoff (figures in docs/performance.md).
func TestAPIServerOutageCatchUpOverDeadConnections(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ns, client := env.Namespace(), env.Client()
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
	pods := func(n int) wait.ConditionWithContextFunc {
		return func(ctx context.Context) (bool, error) {
			list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			return err == nil && len(list.Items) == n, nil
		}
	}
	_, err := client.AppsV1().ReplicaSets(ns).Create(env.Context(), replicaSet(ns, "api", "", 2), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, wait.PollUntilContextTimeout(env.Context(), 50*time.Millisecond, time.Minute, true, pods(2)),
		"the binary created the Pods: %s", &out)

	outage.Cut()
	cut := time.Now()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rs, err := client.AppsV1().ReplicaSets(ns).Get(env.Context(), "api", metav1.GetOptions{})
		if err != nil {
			return err
		}
		rs.Spec.Replicas = ptr.To[int32](3)
		_, err = client.AppsV1().ReplicaSets(ns).Update(env.Context(), rs, metav1.UpdateOptions{})
		return err
	}))
	// 25 s: past the probe's notice and the renew deadline, short of HTTP/2's 45 s, so the
	// connections of before are still in use when the outage ends.
	require.Eventually(t, func() bool { return time.Since(cut) >= 25*time.Second }, time.Minute, 100*time.Millisecond)
	outage.Drop()
	outage.Restore()
	restored := time.Now()
	err = wait.PollUntilContextTimeout(env.Context(), 50*time.Millisecond, 90*time.Second, true, pods(3))
	caughtUp := time.Since(restored)
	require.NoError(t, err, "the binary reconciled the change made during the outage: %s", &out)
	t.Logf("caught up %v after the outage ended", caughtUp.Round(time.Millisecond))
	assert.Less(t, caughtUp, 10*time.Second, "caught up within 10 s of the restore: %s", &out)
	assert.Contains(t, out.String(), `"The API server answers again"`)

	cancel()
	select {
	case code := <-done:
		assert.Equal(t, 0, code, "%s", &out)
	case <-time.After(30 * time.Second):
		t.Fatalf("the binary did not exit: %s", &out)
	}
	if t.Failed() {
		t.Log(strings.ReplaceAll(out.String(), `\n`, "\n"))
	}
}
