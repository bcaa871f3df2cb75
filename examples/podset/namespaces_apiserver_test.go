package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/internal/kubelet"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// --namespace-selector on a real API server, with RBAC granted per namespace
// (deploy/rbac-namespace-selector.yaml and one RoleBinding per namespace): a labelled and bound
// namespace is managed; a namespace labelled before its RoleBinding exists does not crash the
// binary and is managed, without a restart, once bound ("RBAC granted late"); an unlabelled
// namespace is let go: a PodSet created there is not reconciled and the Pods of the PodSet already
// there stay.
func TestAPIServerNamespaceSelector(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	in := rbactest.ApplyFiles(t, env, "deploy/rbac-namespace-selector.yaml", "deploy/deployment.yaml")
	ctx, admin := env.Context(), env.Client()
	require.NoError(t, customresource.EnsureCRDFromYAML(ctx, env.Dynamic(), v1alpha1.CRDManifest), "the admin installs the CRD")
	crs, err := customresource.NewClient[*v1alpha1.PodSet](env.Dynamic(), v1alpha1.GVR)
	require.NoError(t, err)

	a, b := in.Namespace+"-a", in.Namespace+"-b"
	for _, ns := range []string{a, b} {
		_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = admin.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
		k, err := kubelet.New(admin, kubelet.Options{Namespace: ns, StartupDelay: -1})
		require.NoError(t, err)
		env.RunController(ctx, k)
	}
	label := func(ns string, on bool) {
		t.Helper()
		n, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		require.NoError(t, err)
		if on {
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[selectorLabel] = "true"
		} else {
			delete(n.Labels, selectorLabel)
		}
		_, err = admin.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	bind := func(ns string) {
		t.Helper()
		_, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "ctrlkit-podset"},
			// Apply renamed the manifests' cluster-scoped objects after the test's namespace.
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "ctrlkit-podset-namespaced-" + in.Namespace},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "ctrlkit-podset", Namespace: in.Namespace}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	create := func(ns, name, app string) {
		t.Helper()
		ps := loadSample(t)
		ps.Namespace, ps.Name = ns, name
		ps.Spec.Selector.MatchLabels = map[string]string{"app": app}
		ps.Spec.Template.Labels = map[string]string{"app": app}
		_, err := crs.Create(ctx, ps, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	poll := func(what string, cond func(context.Context) (bool, error)) {
		t.Helper()
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, cond), what)
	}
	converged := func(ns, name string, n int32) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			ps, err := crs.Get(ctx, ns, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			st := ps.Status
			return st.Replicas == n && st.ReadyReplicas == n && st.ObservedGeneration == ps.Generation &&
				meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionAvailable), nil
		}
	}
	podsOf := func(ns, app string) []corev1.Pod {
		t.Helper()
		list, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		require.NoError(t, err)
		return list.Items
	}
	// The binary logs each namespace its two informers (PodSets and Pods) take in or let go.
	var p *rbactest.Process
	logged := func(msg, ns string) func(context.Context) (bool, error) {
		return func(context.Context) (bool, error) {
			n := 0
			for _, line := range strings.Split(p.Output(), "\n") {
				if strings.Contains(line, `"`+msg+`"`) && strings.Contains(line, fmt.Sprintf("namespace=%q", ns)) {
					n++
				}
			}
			return n >= 2, nil
		}
	}

	// (a) Labelled and bound: managed.
	bind(a)
	label(a, true)
	p = in.Start(run, "-v=2", "--namespace-selector="+selectorLabel+"=true")
	create(a, "web", "web")
	poll("the PodSet of the labelled namespace converges", converged(a, "web", 3))
	p.AwaitProbes()

	// (b) Labelled before its RoleBinding exists: lists there are refused, the binary runs on.
	create(b, "api", "api")
	label(b, true)
	poll("namespace b taken in", logged("Namespace entered the informer's scope", b))
	poll("the refusal is logged", func(context.Context) (bool, error) {
		code, exited := p.Exited()
		require.False(t, exited, "the binary exited with %d", code)
		return strings.Contains(p.Output(), `cannot list resource \"podsets\"`) || strings.Contains(p.Output(), `cannot list resource "podsets"`), nil
	})
	assert.Empty(t, podsOf(b, "api"), "nothing done where nothing may be read")
	bind(b)
	poll("RBAC granted late: the PodSet converges without a restart", converged(b, "api", 3))

	// (c) Unlabelled: let go, not cleaned up.
	label(a, false)
	poll("namespace a let go", logged("Namespace left the informer's scope", a))
	create(a, "late", "late")
	// The one bounded wait: nothing must happen, so a short window is watched.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		require.Empty(t, podsOf(a, "late"), "a PodSet in an unwatched namespace is not reconciled")
		time.Sleep(100 * time.Millisecond)
	}
	late, err := crs.Get(ctx, a, "late", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Zero(t, late.Status.ObservedGeneration, "no status written")
	web := podsOf(a, "web")
	require.Len(t, web, 3, "the Pods of the PodSet already there stay")
	for _, pod := range web {
		assert.Nil(t, pod.DeletionTimestamp, pod.Name)
	}
	code, exited := p.Exited()
	require.False(t, exited, "exited with %d", code)
	for _, verb := range []string{"list", "watch"} {
		crd := rbactest.Access{Verb: verb, Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", ClusterScoped: true}
		assert.Empty(t, p.ForbiddenLines(in, crd), "the manifest lets the binary watch its CRD")
	}
	assert.Equal(t, 0, p.Stop(), "a clean exit when interrupted")
}
