package main

import (
	"context"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/examples/configmap-propagator/propagator"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// leastPrivilegeEnv applies the manifests of files, labels a target namespace for the test's
// source ConfigMap (the source namespace is the Deployment's: the test's) and creates the
// source.
func leastPrivilegeEnv(t *testing.T, files ...string) (*testkit.Env, *rbactest.Install, string) {
	t.Helper()
	env := testkit.SharedAPIServer(t)
	in := rbactest.ApplyFiles(t, env, append(files, "deploy/deployment.yaml", "deploy/metrics-reader.yaml")...)
	src := env.Namespace()
	target := src + "-t"
	targetNamespace(t, env, target, map[string]string{"ctrlkit.dev/test-run": src})
	_, err := env.Client().CoreV1().ConfigMaps(src).Create(env.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings", Labels: map[string]string{propagator.LabelPropagate: "true"},
			Annotations: map[string]string{propagator.AnnotationTargets: "ctrlkit.dev/test-run=" + src}},
		Data: map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return env, in, target
}

// The shipped manifests are least privilege, proven on a real API server, here for a right the
// binary needs before its controllers start: without "create leases" it cannot lead, logs the
// refusal (verb, resource and group) and keeps contending instead of exiting, and its /readyz
// fails naming the Lease, the verb and the refusal, as an operator's kubectl describe pod shows
// it (its /healthz passes: a restart would not help); given the right, it leads, is ready and
// propagates, with deploy/rbac.yaml and its ServiceAccount's token as its only credentials.
func TestAPIServerLeastPrivilege(t *testing.T) {
	env, in, target := leastPrivilegeEnv(t, "deploy/rbac.yaml")
	createLease := rbactest.Access{Verb: "create", Group: "coordination.k8s.io", Resource: "leases"}
	restore := in.Revoke("Role", "ctrlkit-multi-controller-leader-election", createLease)

	p := in.Start(run)
	p.AwaitForbidden(in, createLease, 2)
	assert.Contains(t, p.Output(), `"Error initially creating lease lock"`)
	assert.Contains(t, p.Output(), `"The API server refuses this replica its lease`)
	body := p.AwaitProbe("/readyz", http.StatusServiceUnavailable, "cannot create lease")
	assert.Contains(t, body, "leaderelection: cannot create lease "+in.Namespace+"/ctrlkit-multi-controller: ")
	assert.Contains(t, body, rbactest.ForbiddenMessage(in.User, "create", "leases", "coordination.k8s.io"))
	code, _ := p.Probe("/healthz")
	assert.Equal(t, http.StatusOK, code, "healthy: a restart would not give it the right")
	assert.Nil(t, copyData(t, env, target, "settings"), "no controller runs before the binary leads")
	rbactest.CheckMetricsAccess(p, in, "ctrlkit-multi-controller-metrics-reader")

	restore()
	require.Eventually(t, func() bool { return copyData(t, env, target, "settings")["k"] == "v" },
		30*time.Second, 20*time.Millisecond, "no copy")
	assert.Contains(t, p.Output(), `"Successfully acquired lease"`)
	p.AwaitProbes() // ready once it leads
	assert.Equal(t, 0, p.Stop(), "a clean exit when interrupted")
}

// The pod-counter's rules are an opt-in file of their own: with the gate on and
// deploy/rbac-podcounter.yaml applied, it counts; without "patch namespaces" it says so.
func TestAPIServerLeastPrivilegePodCounter(t *testing.T) {
	env, in, target := leastPrivilegeEnv(t, "deploy/rbac.yaml", "deploy/rbac-podcounter.yaml")
	p := in.Start(run, "--feature-gates=PodCounter=true")
	pod := func(name string) {
		_, err := env.Client().CoreV1().Pods(target).Create(env.Context(), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	counted := func(n string) {
		t.Helper()
		require.Eventually(t, func() bool {
			ns, err := env.Client().CoreV1().Namespaces().Get(context.Background(), target, metav1.GetOptions{})
			require.NoError(t, err)
			return ns.Annotations[AnnotationPodCount] == n
		}, 30*time.Second, 20*time.Millisecond, "pod count %s", n)
	}
	pod("a")
	counted("1")
	p.AwaitLog(regexp.MustCompile(`"Counted pods" controller="pod-counter"`))
	require.Eventually(t, func() bool { return copyData(t, env, target, "settings")["k"] == "v" },
		30*time.Second, 20*time.Millisecond, "no copy")

	patch := rbactest.Access{Verb: "patch", Resource: "namespaces", ClusterScoped: true}
	restore := in.Revoke("ClusterRole", "ctrlkit-multi-controller-podcounter", patch)
	pod("b")
	assert.Contains(t, p.AwaitForbidden(in, patch, 2), `controller="pod-counter"`)
	restore()
	counted("2")
	assert.Equal(t, 0, p.Stop(), "a clean exit when interrupted")
}
