package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/util/yaml"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/internal/kubelet"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/examples/podset/podset"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// The binary against a real kube-apiserver: run installs the CRD, the sample PodSet converges
// with an orphan adopted (a merge patch the real server accepts), the Pods' owner references
// pass the server's validation, status is written through /status and events are visible
// through the API. The test plays kubelet (examples/internal/kubelet binds Pods and reports
// them Ready). Skipped without the binaries (make kube) and in -short mode.
func TestRunAgainstARealAPIServer(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ns := env.Namespace()
	ctx := env.Context()
	podsets, err := customresource.NewClient[*v1alpha1.PodSet](env.Dynamic(), v1alpha1.GVR)
	require.NoError(t, err)
	crs := podsets
	pods := env.Client().CoreV1().Pods(ns)

	// Before the controller runs: an orphan that the sample's selector matches.
	_, err = pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-orphan", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	runCtx, cancel := context.WithCancel(ctx)
	out := &rbactest.LogBuffer{}
	done := make(chan int, 1)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, demo.WriteKubeconfig(kubeconfig, env.Config()))
	go func() {
		done <- run(runCtx, []string{"--kubeconfig", kubeconfig, "--namespace", ns, "--leader-elect-resource-namespace", ns, "-v", "2"}, out)
	}()
	stopped := false
	stop := func() int {
		cancel()
		stopped = true
		return <-done
	}
	defer func() {
		if !stopped {
			stop()
		}
		if t.Failed() {
			t.Log(out.String())
		}
	}()
	k, err := kubelet.New(env.Client(), kubelet.Options{Namespace: ns, StartupDelay: -1})
	require.NoError(t, err)
	kubeletDone := make(chan error, 1)
	kubeletCtx, stopKubelet := context.WithCancel(ctx)
	go func() { kubeletDone <- k.Run(kubeletCtx) }()
	defer func() { stopKubelet(); <-kubeletDone }()

	poll := func(what string, cond func(context.Context) (bool, error)) {
		t.Helper()
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, cond), what)
	}
	sample := loadSample(t)
	sample.Namespace = ns
	poll("run installs the CRD; the sample PodSet can be created", func(ctx context.Context) (bool, error) {
		_, err := crs.Create(ctx, sample, metav1.CreateOptions{})
		return err == nil, nil // NotFound until the CRD is served
	})
	// When an earlier test installed the CRD, the create can win the race with run's log line.
	poll("run reports the CRD served", func(context.Context) (bool, error) {
		return strings.Contains(out.String(), `"PodSet CRD is served"`), nil
	})

	converged := func(n int32) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			ps, err := crs.Get(ctx, ns, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			st := ps.Status
			return st.Replicas == n && st.ReadyReplicas == n && st.ObservedGeneration == ps.Generation &&
				meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionAvailable), nil
		}
	}
	poll("3 ready Pods in status", converged(3))

	ps, err := crs.Get(ctx, ns, "web", metav1.GetOptions{})
	require.NoError(t, err)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	require.NoError(t, err)
	require.Len(t, list.Items, 3)
	for _, p := range list.Items {
		assert.Equal(t, []metav1.OwnerReference{{APIVersion: "examples.ctrlkit.dev/v1alpha1", Kind: "PodSet", Name: "web",
			UID: ps.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}, p.OwnerReferences, p.Name)
	}
	for _, typ := range []string{v1alpha1.ConditionAvailable, v1alpha1.ConditionReplicaFailure} {
		c := meta.FindStatusCondition(ps.Status.Conditions, typ)
		require.NotNil(t, c, typ)
		assert.Equal(t, ps.Generation, c.ObservedGeneration, typ)
	}
	assert.Equal(t, metav1.ConditionFalse, meta.FindStatusCondition(ps.Status.Conditions, v1alpha1.ConditionReplicaFailure).Status)

	// Scale down through the main resource; the server bumps generation, the controller
	// deletes two Pods (they stay Terminating: no real kubelet confirms) and reports it.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ps, err := crs.Get(ctx, ns, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		ps.Spec.Replicas = ptr.To[int32](1)
		_, err = crs.Update(ctx, ps, metav1.UpdateOptions{})
		return err
	}))
	poll("1 ready Pod in status", converged(1))

	events := map[string]int32{}
	poll("events on the PodSet are visible through the API", func(ctx context.Context) (bool, error) {
		list, err := env.Client().CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		clear(events)
		for _, e := range list.Items {
			o := e.InvolvedObject
			if o.Kind == v1alpha1.Kind && o.Name == "web" && o.UID == ps.UID && o.APIVersion == v1alpha1.GroupVersion.String() &&
				e.Source.Component == podset.Name {
				events[e.Reason] += max(e.Count, 1)
			}
		}
		return events[podset.ReasonSuccessfulCreate] == 2 && events[podset.ReasonSuccessfulDelete] == 2, nil
	})

	require.Equal(t, 0, stop(), "run exits cleanly when interrupted")
	assert.NotContains(t, out.String(), "Reconcile failed", "no retries were needed")
}

// loadSample decodes podset.yaml, the manifest docs/examples.md tells users to apply.
func loadSample(t *testing.T) *v1alpha1.PodSet {
	t.Helper()
	data, err := os.ReadFile("podset.yaml")
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.NewYAMLOrJSONDecoder(strings.NewReader(string(data)), 4096).Decode(&u.Object))
	// The client is only used to convert; a fake dynamic client serves.
	c, err := customresource.NewClient[*v1alpha1.PodSet](dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), v1alpha1.GVR)
	require.NoError(t, err)
	ps, err := c.FromUnstructured(u)
	require.NoError(t, err)
	return ps
}
