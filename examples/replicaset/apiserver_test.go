package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	kworkqueue "k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/internal/kubelet"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// These tests run the controller against a real kube-apiserver (testkit.SharedAPIServer:
// skipped with -short or without the binaries, see `make kube`). What a fake cannot prove:
// the API server accepts the Pods and their owner references, the adoption and release patches
// go through its strategic-merge-patch code with the UID precondition, the status writes pass
// validation, generation and observedGeneration work as the real server counts them, and
// scaling down works with graceful deletion.

// apiEnv runs the controller and a simulated kubelet (bind, Running/Ready, finish deletions)
// on the shared API server, in the test's namespace.
func apiEnv(t *testing.T) (*testkit.Env, kubernetes.Interface, string) {
	t.Helper()
	env := testkit.SharedAPIServer(t)
	rsc, err := NewReplicaSetController(env.Factory(), env.Client(), Options{
		RateLimiter: kworkqueue.NewTypedItemExponentialFailureRateLimiter[controller.Key](5*time.Millisecond, 50*time.Millisecond),
	})
	require.NoError(t, err)
	k, err := kubelet.New(env.Client(), kubelet.Options{Namespace: env.Namespace(), StartupDelay: -1})
	require.NoError(t, err)
	env.Sync()
	env.RunController(env.Context(), k)
	env.RunController(env.Context(), rsc)
	return env, env.Client(), env.Namespace()
}

// awaitConverged waits until ReplicaSet name reports want ready replicas for its current
// generation and owns exactly want live Pods.
func awaitConverged(t *testing.T, client kubernetes.Interface, namespace, name string, want int32) *appsv1.ReplicaSet {
	t.Helper()
	var rs *appsv1.ReplicaSet
	var owned int
	ok := assert.Eventually(t, func() bool {
		var err error
		rs, err = client.AppsV1().ReplicaSets(namespace).Get(context.Background(), name, metav1.GetOptions{})
		require.NoError(t, err)
		pods, err := client.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		owned = 0
		for _, p := range pods.Items {
			if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == rs.UID && p.DeletionTimestamp == nil {
				owned++
			}
		}
		st := rs.Status
		return st.ObservedGeneration == rs.Generation && st.Replicas == want && st.ReadyReplicas == want &&
			st.AvailableReplicas == want && owned == int(want)
	}, 60*time.Second, 50*time.Millisecond)
	if !ok {
		t.Fatalf("replicaset %s/%s did not converge to %d: status %+v, generation %d, %d pods owned", namespace, name, want, rs.Status, rs.Generation, owned)
	}
	return rs
}

func TestAPIServerScaleAdoptRelease(t *testing.T) {
	env, client, ns := apiEnv(t)
	ctx := env.Context()

	// An orphan that matches (adopted) and a Pod the ReplicaSet will control but whose labels
	// do not match (released), both through real strategic merge patches.
	// The orphan is created first, so the controller usually finds it on its first sync. If its
	// cache lags, the controller creates three Pods, adopts the orphan as a fourth and may pick
	// it as the surplus to delete (legitimately), so adoption is checked on a watch of the
	// orphan rather than on the Pod as it ends up.
	want := replicaSet(ns, "web", "", 3)
	orphanWatch, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=orphan"})
	require.NoError(t, err)
	defer orphanWatch.Stop()
	orphan := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "orphan", Labels: map[string]string{"app": "web"}},
		Spec:       *want.Spec.Template.Spec.DeepCopy(),
	}
	_, err = client.CoreV1().Pods(ns).Create(ctx, orphan, metav1.CreateOptions{})
	require.NoError(t, err)
	rs, err := client.AppsV1().ReplicaSets(ns).Create(ctx, want, metav1.CreateOptions{})
	require.NoError(t, err)
	strayed := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "strayed", Labels: map[string]string{"app": "legacy"},
			OwnerReferences: []metav1.OwnerReference{*ownerRefTo(rs)}},
		Spec: *rs.Spec.Template.Spec.DeepCopy(),
	}
	_, err = client.CoreV1().Pods(ns).Create(ctx, strayed, metav1.CreateOptions{})
	require.NoError(t, err, "the API server accepts a controller reference to the ReplicaSet")

	rs = awaitConverged(t, client, ns, "web", 3)
	assert.Equal(t, int64(1), rs.Generation)
	adopted := false
	for !adopted {
		select {
		case ev, open := <-orphanWatch.ResultChan():
			require.True(t, open, "the orphan's watch ended before it was adopted")
			if p, ok := ev.Object.(*corev1.Pod); ok {
				if ref := metav1.GetControllerOf(p); ref != nil {
					require.Equal(t, rs.UID, ref.UID, "orphan adopted by the ReplicaSet")
					adopted = true
				}
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the orphan was never adopted")
		}
	}
	if got, err := client.CoreV1().Pods(ns).Get(ctx, "orphan", metav1.GetOptions{}); err == nil && got.DeletionTimestamp == nil {
		require.NotNil(t, metav1.GetControllerOf(got), "a surviving orphan stays adopted")
		assert.Equal(t, rs.UID, metav1.GetControllerOf(got).UID)
	} else if err != nil {
		require.True(t, apierrors.IsNotFound(err), "got %v", err)
	}
	got, err := client.CoreV1().Pods(ns).Get(ctx, "strayed", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, got.OwnerReferences, "strayed released")

	scale := func(n int32) {
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := client.AppsV1().ReplicaSets(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Spec.Replicas = ptr.To(n)
			_, err = client.AppsV1().ReplicaSets(ns).Update(ctx, cur, metav1.UpdateOptions{})
			return err
		}))
	}
	scale(6)
	rs = awaitConverged(t, client, ns, "web", 6)
	assert.Equal(t, int64(2), rs.Generation, "the API server bumped the generation for the spec change")
	assert.Equal(t, int32(5), rs.Status.FullyLabeledReplicas, "all but the adopted orphan carry the template's labels")

	// Scaling down deletes gracefully: the Pods stay Terminating until the (simulated) kubelet
	// finishes them, and the controller must not count them meanwhile.
	scale(1)
	awaitConverged(t, client, ns, "web", 1)
}

// The binary itself: run with --kubeconfig against the API server, it serves until its context
// ends and exits 0.
func TestAPIServerRunWithKubeconfig(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ns := env.Namespace()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, demo.WriteKubeconfig(path, env.Config()))

	ctx, cancel := context.WithCancel(env.Context())
	defer cancel()
	var out rbactest.LogBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--kubeconfig=" + path, "--metrics-addr=127.0.0.1:0", "--health-addr=127.0.0.1:0",
			"--leader-elect-resource-namespace=" + ns, "--leader-elect-resource-name=rs-" + ns}, &out)
	}()

	_, err := env.Client().AppsV1().ReplicaSets(ns).Create(env.Context(), replicaSet(ns, "api", "", 2), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		pods, err := env.Client().CoreV1().Pods(ns).List(env.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		return len(pods.Items) == 2
	}, 60*time.Second, 50*time.Millisecond, "the binary created the Pods: %s", &out)
	lease, err := env.Client().CoordinationV1().Leases(ns).Get(env.Context(), "rs-"+ns, metav1.GetOptions{})
	require.NoError(t, err, "it led through a Lease on the API server")
	assert.NotEmpty(t, ptr.Deref(lease.Spec.HolderIdentity, ""))

	cancel()
	select {
	case code := <-done:
		assert.Equal(t, 0, code, out.String())
	case <-time.After(time.Minute):
		t.Fatal("run did not return after its context ended")
	}
	assert.Contains(t, out.String(), `"Running against a cluster"`)
}
