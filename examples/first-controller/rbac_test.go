package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// deploy/rbac.yaml is all the controller needs, proven on a real API server: with a token of
// its ServiceAccount as its only credentials it writes and deletes the ConfigMaps; with "create
// configmaps" taken away it logs the refusal, naming verb and resource, and retries; given
// back, it converges.
func TestAPIServerLeastPrivilege(t *testing.T) {
	m, err := rbactest.LoadRBAC("deploy/rbac.yaml")
	require.NoError(t, err)
	env := testkit.SharedAPIServer(t)
	in := rbactest.Apply(t, env, m)
	ns, admin := env.Namespace(), env.Client()

	cfg, err := clientcmd.BuildConfigFromFlags("", in.Kubeconfig)
	require.NoError(t, err)
	mgr, err := manager.New(manager.Options{Config: cfg})
	require.NoError(t, err)
	_, err = NewInfoController(mgr)
	require.NoError(t, err)
	log := rbactest.RunManager(t, env.Context(), mgr)

	await := func(what string, cond func() bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(env.Context(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) { return cond(), nil })
		require.NoError(t, err, what)
	}
	infoExists := func(name string) func() bool {
		return func() bool {
			_, err := admin.CoreV1().ConfigMaps(ns).Get(env.Context(), name+"-info", metav1.GetOptions{})
			return err == nil
		}
	}
	create := func(name string) {
		t.Helper()
		d := deployment(name, map[string]string{"team": "shop"}, 2)
		d.Namespace = ns // a real server validates what the fake cluster does not
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
		d.Spec.Template.Labels = map[string]string{"app": name}
		_, err := admin.AppsV1().Deployments(ns).Create(env.Context(), d, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	create("web")
	await("web-info written with the shipped rules", infoExists("web"))

	createCMs := rbactest.Access{Verb: "create", Resource: "configmaps"}
	restore := in.Revoke("ClusterRole", "ctrlkit-first-controller", createCMs)
	create("api")
	await("the refusal logged on two attempts", func() bool { return len(in.ForbiddenLines(log.String(), createCMs)) >= 2 })
	restore()
	await("api-info written once the rule is back", infoExists("api"))

	web, err := admin.AppsV1().Deployments(ns).Get(env.Context(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	web.Labels = nil
	_, err = admin.AppsV1().Deployments(ns).Update(env.Context(), web, metav1.UpdateOptions{})
	require.NoError(t, err)
	await("web-info deleted when the label goes", func() bool { return !infoExists("web")() })
}
