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

// An operator's outage, black box: the binary runs with its default flags against an API
// server whose packets are then dropped (testkit.Outage). It says so in its log within
// its probe interval, says when the server answers again, and then reconciles the change made
// meanwhile. A SIGTERM during a second outage ends it cleanly, and its log says what the
// shutdown waited for: the controllers' in-flight reconciles and the bounded lease release.
func TestAPIServerOutageIsLoggedAndShutdownEnds(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	r := runBehindOutage(t, env)
	out, outage := r.out, r.outage
	logged := func(what string) func() bool {
		return func() bool { return strings.Contains(out.String(), what) }
	}

	outage.Cut()
	require.Eventually(t, logged(`"The API server does not answer`), 30*time.Second, 50*time.Millisecond, "%s", out)
	r.scale(t, 3) // while the binary cannot see it
	outage.Restore()
	require.Eventually(t, logged(`"The API server answers again"`), 30*time.Second, 50*time.Millisecond, "%s", out)
	require.NoError(t, wait.PollUntilContextTimeout(env.Context(), 50*time.Millisecond, 60*time.Second, true, r.pods(3)),
		"the binary reconciled the change made during the outage: %s", out)

	outage.Cut()
	require.Eventually(t, logged(`"The API server does not answer`), 30*time.Second, 50*time.Millisecond, "%s", out)
	r.stop(t, 60*time.Second)
	for _, line := range []string{`"Shutting down"`, `"Waiting for the controllers to finish their in-flight reconciles"`, `"Manager stopped"`} {
		assert.Contains(t, out.String(), line)
	}
	if strings.Count(out.String(), `"Started leading`) > strings.Count(out.String(), `"Lost the lease`) {
		assert.Contains(t, out.String(), `"Releasing the lease"`, "a leader says it waits for the release")
	}
}

// outageRun is the binary running against a shared API server through an Outage proxy, leading
// through a Lease in the test's namespace, with the ReplicaSet "api" of 2 Pods reconciled.
type outageRun struct {
	env    *testkit.Env
	outage *testkit.Outage
	out    *rbactest.LogBuffer
	cancel context.CancelFunc
	done   chan int
}

func runBehindOutage(t *testing.T, env *testkit.Env) *outageRun {
	t.Helper()
	ns := env.Namespace()
	r := &outageRun{env: env, outage: testkit.NewOutage(t, env.Config()), out: &rbactest.LogBuffer{}, done: make(chan int, 1)}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, demo.WriteKubeconfig(path, r.outage.Config()))
	var ctx context.Context
	ctx, r.cancel = context.WithCancel(env.Context())
	t.Cleanup(r.cancel)
	go func() {
		r.done <- run(ctx, []string{"--kubeconfig=" + path, "--metrics-addr=", "--health-addr=127.0.0.1:0",
			"--leader-elect-resource-namespace=" + ns, "--leader-elect-resource-name=rs-" + ns}, r.out)
	}()
	_, err := env.Client().AppsV1().ReplicaSets(ns).Create(env.Context(), replicaSet(ns, "api", "", 2), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, wait.PollUntilContextTimeout(env.Context(), 50*time.Millisecond, time.Minute, true, r.pods(2)),
		"the binary created the Pods: %s", r.out)
	return r
}

// pods holds once the test's namespace has n Pods.
func (r *outageRun) pods(n int) wait.ConditionWithContextFunc {
	return func(ctx context.Context) (bool, error) {
		list, err := r.env.Client().CoreV1().Pods(r.env.Namespace()).List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == n, nil
	}
}

// scale sets the ReplicaSet's replicas (through the test's own client, not the proxy).
func (r *outageRun) scale(t *testing.T, n int32) {
	t.Helper()
	rss := r.env.Client().AppsV1().ReplicaSets(r.env.Namespace())
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rs, err := rss.Get(r.env.Context(), "api", metav1.GetOptions{})
		if err != nil {
			return err
		}
		rs.Spec.Replicas = ptr.To(n)
		_, err = rss.Update(r.env.Context(), rs, metav1.UpdateOptions{})
		return err
	}))
}

// stop ends the binary as SIGTERM would and checks it exits 0 within d.
func (r *outageRun) stop(t *testing.T, d time.Duration) {
	t.Helper()
	r.cancel()
	select {
	case code := <-r.done:
		assert.Equal(t, 0, code, "%s", r.out)
	case <-time.After(d):
		t.Fatalf("the binary did not exit: %s", r.out)
	}
}
