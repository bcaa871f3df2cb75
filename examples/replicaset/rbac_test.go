package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/internal/kubelet"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// The shipped manifests are least privilege, proven on a real API server: with deploy/rbac.yaml
// and a token of its ServiceAccount as its only credentials, the binary (run with the
// Deployment's arguments) converges, releases, scales up and down; with "create pods" taken away, scaling up makes it log the
// refusal, naming verb and resource, and retry with backoff rather than exit; given back, it
// converges.
func TestAPIServerLeastPrivilege(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	in := rbactest.ApplyFiles(t, env, "deploy/rbac.yaml", "deploy/deployment.yaml", "deploy/metrics-reader.yaml")
	ns, client := env.Namespace(), env.Client()

	// The test plays the kubelet (with the admin's credentials: it is not the binary).
	k, err := kubelet.New(client, kubelet.Options{Namespace: ns, StartupDelay: -1})
	require.NoError(t, err)
	env.RunController(env.Context(), k)

	p := in.Start(run)
	rs, err := client.AppsV1().ReplicaSets(ns).Create(env.Context(), replicaSet(ns, "web", "", 2), metav1.CreateOptions{})
	require.NoError(t, err)
	awaitConverged(t, client, ns, "web", 2)
	p.AwaitProbes()
	rbactest.CheckMetricsAccess(p, in, "ctrlkit-replicaset-metrics-reader")

	// A Pod it controls whose labels do not match is released: a patch of ownerReferences.
	strayed := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "strayed", Labels: map[string]string{"app": "legacy"},
			OwnerReferences: []metav1.OwnerReference{*ownerRefTo(rs)}},
		Spec: *rs.Spec.Template.Spec.DeepCopy(),
	}
	_, err = client.CoreV1().Pods(ns).Create(env.Context(), strayed, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		pod, err := client.CoreV1().Pods(ns).Get(context.Background(), "strayed", metav1.GetOptions{})
		require.NoError(t, err)
		return len(pod.OwnerReferences) == 0
	}, 30*time.Second, 20*time.Millisecond, "strayed released")

	createPods := rbactest.Access{Verb: "create", Resource: "pods"}
	restore := in.Revoke("ClusterRole", "ctrlkit-replicaset", createPods)
	scale := func(n int32) {
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			rs, err := client.AppsV1().ReplicaSets(ns).Get(context.Background(), "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			rs.Spec.Replicas = ptr.To(n)
			_, err = client.AppsV1().ReplicaSets(ns).Update(context.Background(), rs, metav1.UpdateOptions{})
			return err
		}))
	}
	scale(3)
	line := p.AwaitForbidden(in, createPods, 2)
	assert.Contains(t, line, `"Reconcile failed; retrying with backoff"`)

	restore()
	awaitConverged(t, client, ns, "web", 3)
	scale(1) // deletes
	awaitConverged(t, client, ns, "web", 1)
	assert.Equal(t, 0, p.Stop(), "a clean exit when interrupted")
}

// A right an informer needs is refused from the start: without "watch pods" (client-go lists
// by streaming a watch, then falls back to a plain list, and then watches) the binary logs the
// refusal on every attempt of the reflector rather than exiting, and converges once the right
// is back.
func TestAPIServerLeastPrivilegeInformer(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	in := rbactest.ApplyFiles(t, env, "deploy/rbac.yaml", "deploy/deployment.yaml")
	ns, client := env.Namespace(), env.Client()
	k, err := kubelet.New(client, kubelet.Options{Namespace: ns, StartupDelay: -1})
	require.NoError(t, err)
	env.RunController(env.Context(), k)

	watchPods := rbactest.Access{Verb: "watch", Resource: "pods", ClusterScoped: true}
	restore := in.Revoke("ClusterRole", "ctrlkit-replicaset", watchPods)
	p := in.Start(run)
	assert.Contains(t, p.AwaitForbidden(in, watchPods, 2), `"Failed to watch"`)

	restore()
	_, err = client.AppsV1().ReplicaSets(ns).Create(env.Context(), replicaSet(ns, "web", "", 1), metav1.CreateOptions{})
	require.NoError(t, err)
	awaitConverged(t, client, ns, "web", 1)
	p.AwaitProbes()
	assert.Equal(t, 0, p.Stop(), "a clean exit when interrupted")
}

// Sharded, the binary asks the API server for the ring's rights before it starts anything:
// without deploy/sharding.yaml's "patch replicasets" it exits 1 with a message naming the
// request, instead of running with ReplicaSets the sharder can never label.
func TestAPIServerShardingLeastPrivilege(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	in := rbactest.ApplyFiles(t, env, "deploy/rbac.yaml", "deploy/sharding.yaml", "deploy/deployment.yaml")
	patchRS := rbactest.Access{Verb: "patch", Group: "apps", Resource: "replicasets", ClusterScoped: true}
	in.Revoke("ClusterRole", "ctrlkit-replicaset-sharding", patchRS)
	p := in.Start(run, "--sharded", "--shard-identity=rs-0", "--shard-namespace="+env.Namespace())
	assert.Equal(t, demo.ExitFailed, p.Wait())
	assert.Contains(t, p.Output(), `ring \"replicasets\" may not patch replicasets.apps in every namespace`)
}
