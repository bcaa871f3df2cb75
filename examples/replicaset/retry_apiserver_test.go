package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	kworkqueue "k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/examples/internal/kubelet"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// Issue 28, on a real API server: without "create pods" a scaled-up ReplicaSet fails its syncs
// until the controller's retries are exhausted (observed on the Manager's
// ctrlkit_controller_retries_exhausted_total), reporting the refusal as a FailedCreate Warning
// event on the ReplicaSet and in its ReplicaFailure condition. The rule is restored only after
// that, and nobody touches the ReplicaSet again: it still converges, all Pods created and the
// condition cleared, because a key past its retries is retried at the slow interval instead of
// being dropped until an event that never comes.
//
// The controller runs as the binary would (a Manager, its event recorder) with deploy/rbac.yaml's
// ServiceAccount token as its only credentials, with retries shortened so the test takes
// seconds: 3 retries from 5 ms, then one every second.
func TestAPIServerConvergesAfterRetriesAreExhausted(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	in := rbactest.ApplyFiles(t, env, "deploy/rbac.yaml", "deploy/deployment.yaml")
	ns, admin := env.Namespace(), env.Client()

	// The test plays the kubelet (with the admin's credentials: it is not the controller).
	k, err := kubelet.New(admin, kubelet.Options{Namespace: ns, StartupDelay: -1})
	require.NoError(t, err)
	env.RunController(env.Context(), k)

	cfg, err := clientcmd.BuildConfigFromFlags("", in.Kubeconfig)
	require.NoError(t, err)
	mgr, err := manager.New(manager.Options{Config: cfg, Registerer: prometheus.NewRegistry(),
		// Only the test's namespace: the shared server holds other tests' ReplicaSets.
		Cache: informer.Options{Namespace: ns}})
	require.NoError(t, err)
	rsc, err := NewReplicaSetController(mgr.Factory(), mgr.Client(), Options{
		RateLimiter: kworkqueue.NewTypedItemExponentialFailureRateLimiter[controller.Key](5*time.Millisecond, 50*time.Millisecond),
		Retry:       controller.Backoff(3, controller.Every(time.Second)),
		Recorder:    mgr.EventRecorderFor(ControllerName),
	})
	require.NoError(t, err)
	require.NoError(t, mgr.Add(rsc))
	log := rbactest.RunManager(t, env.Context(), mgr)
	await := func(what string, cond func() bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(env.Context(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) { return cond(), nil })
		require.NoError(t, err, what)
	}

	_, err = admin.AppsV1().ReplicaSets(ns).Create(env.Context(), replicaSet(ns, "web", "", 3), metav1.CreateOptions{})
	require.NoError(t, err)
	awaitConverged(t, admin, ns, "web", 3)

	createPods := rbactest.Access{Verb: "create", Resource: "pods"}
	restore := in.Revoke("ClusterRole", "ctrlkit-replicaset", createPods)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rs, err := admin.AppsV1().ReplicaSets(ns).Get(env.Context(), "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		rs.Spec.Replicas = ptr.To[int32](5)
		_, err = admin.AppsV1().ReplicaSets(ns).Update(env.Context(), rs, metav1.UpdateOptions{})
		return err
	}))
	await("the retries of the ReplicaSet are exhausted", func() bool {
		return counter(t, mgr.Gatherer(), "ctrlkit_controller_retries_exhausted_total", ControllerName) >= 1
	})

	// What an operator sees meanwhile: kubectl get events, and the ReplicaSet's status.
	var warning corev1.Event
	await("a FailedCreate Warning event on the ReplicaSet", func() bool {
		for _, ev := range rsEvents(t, admin, ns, "web") {
			if ev.Type == corev1.EventTypeWarning && ev.Reason == ReasonFailedCreate {
				warning = ev
				return true
			}
		}
		return false
	})
	assert.True(t, strings.HasPrefix(warning.Message, "Error creating: "), warning.Message)
	assert.Contains(t, warning.Message, "forbidden")
	assert.Contains(t, warning.Message, in.User, "the refusal names the ServiceAccount")
	assert.Equal(t, ControllerName, warning.Source.Component)
	rs, err := admin.AppsV1().ReplicaSets(ns).Get(env.Context(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, rs.UID, warning.InvolvedObject.UID)
	assert.Equal(t, "ReplicaSet", warning.InvolvedObject.Kind)
	assert.Equal(t, int32(3), rs.Status.Replicas)
	cond := findCondition(rs.Status.Conditions, appsv1.ReplicaSetReplicaFailure)
	require.NotNil(t, cond, "the refusal is in the ReplicaSet's status")
	assert.Equal(t, ReasonFailedCreate, cond.Reason)
	assert.Contains(t, cond.Message, "forbidden")
	generation := rs.Generation

	restore()
	rs = awaitConverged(t, admin, ns, "web", 5)
	assert.Nil(t, findCondition(rs.Status.Conditions, appsv1.ReplicaSetReplicaFailure), "the failure condition is cleared")
	assert.Equal(t, generation, rs.Generation, "converged without an edit of the ReplicaSet")
	assert.Contains(t, log.String(), `"Reconcile failed after its last retry; retrying at the slow interval until it succeeds"`)
	assert.Contains(t, log.String(), `retryAfter="1s"`)

	// Every Pod it owns was reported as created.
	pods, err := admin.CoreV1().Pods(ns).List(env.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	await("a SuccessfulCreate event for each of the 5 Pods", func() bool {
		created := map[string]bool{}
		for _, ev := range rsEvents(t, admin, ns, "web") {
			if ev.Type == corev1.EventTypeNormal && ev.Reason == ReasonSuccessfulCreate {
				created[strings.TrimPrefix(ev.Message, "Created pod: ")] = true
			}
		}
		for _, p := range pods.Items {
			if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == rs.UID && !created[p.Name] {
				return false
			}
		}
		return true
	})
}

// rsEvents lists the core/v1 Events about ReplicaSet name, as kubectl get events would.
func rsEvents(t *testing.T, client kubernetes.Interface, namespace, name string) []corev1.Event {
	t.Helper()
	sel := fields.Set{"involvedObject.kind": "ReplicaSet", "involvedObject.name": name}.AsSelector().String()
	list, err := client.CoreV1().Events(namespace).List(context.Background(), metav1.ListOptions{FieldSelector: sel})
	require.NoError(t, err)
	return list.Items
}

// counter returns the value of counter name for the controller label ctl in g, 0 when absent.
func counter(t *testing.T, g prometheus.Gatherer, name, ctl string) float64 {
	t.Helper()
	families, err := g.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == ctl {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
