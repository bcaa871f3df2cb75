package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kworkqueue "k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/examples/internal/kubelet"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// On the real API server, a scale-up to 10 (each Pod created, bound, Running, Ready: a burst of
// events and status changes) never makes a status write conflict with the controller's own
// previous one: each sync waits for its last status write to reach the informer.
func TestAPIServerStatusWritesNeverConflict(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ns := env.Namespace()
	rsc, err := NewReplicaSetController(env.Factory(), env.Client(), Options{
		RateLimiter: kworkqueue.NewTypedItemExponentialFailureRateLimiter[controller.Key](5*time.Millisecond, 50*time.Millisecond),
	})
	require.NoError(t, err)
	k, err := kubelet.New(env.Client(), kubelet.Options{Namespace: ns, StartupDelay: -1})
	require.NoError(t, err)
	env.Sync()
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(2)))
	ctx, cancel := context.WithCancel(klog.NewContext(env.Context(), logger))
	defer cancel()
	env.RunController(env.Context(), k)
	env.RunController(ctx, rsc)

	_, err = env.Client().AppsV1().ReplicaSets(ns).Create(env.Context(), replicaSet(ns, "web", "", 10), metav1.CreateOptions{})
	require.NoError(t, err)
	awaitConverged(t, env.Client(), ns, "web", 10)
	env.WaitForQuiet(time.Minute)

	var statusWrites, conflicts int
	for _, entry := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
		switch entry.Message {
		case "Updated status":
			statusWrites++
		case "Status write conflicted; retrying on a fresh copy":
			conflicts++
		}
	}
	require.GreaterOrEqual(t, statusWrites, 2)
	assert.Zero(t, conflicts, "no status write conflicted with the controller's own previous one")
}
