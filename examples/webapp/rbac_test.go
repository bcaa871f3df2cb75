package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	webappv1 "github.com/ctrlkit/ctrlkit/examples/webapp/api/v1"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// deploy/rbac.yaml is all the operator needs, proven on a real API server: with a token of its
// ServiceAccount as its only credentials it creates what a WebApp owns, writes its status and
// runs its finalizer; with "patch webapps/status" taken away it logs the refusal, naming verb
// and resource, and retries; given back, the status converges.
func TestAPIServerLeastPrivilege(t *testing.T) {
	m, err := rbactest.LoadRBAC("deploy/rbac.yaml")
	require.NoError(t, err)
	env := testkit.SharedAPIServer(t)
	ctx, ns := env.Context(), env.Namespace()
	require.NoError(t, customresource.EnsureCRDFromYAML(ctx, env.Dynamic(), webappv1.CRDManifest))
	_, err = env.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: RegistryNamespace}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	in := rbactest.Apply(t, env, m)

	cfg, err := clientcmd.BuildConfigFromFlags("", in.Kubeconfig)
	require.NoError(t, err)
	mgr, err := manager.New(manager.Options{Config: cfg})
	require.NoError(t, err)
	_, err = NewWebAppController(mgr)
	require.NoError(t, err)
	log := rbactest.RunManager(t, ctx, mgr)

	apps, err := customresource.NewClient[*webappv1.WebApp](env.Dynamic(), webappv1.GVR)
	require.NoError(t, err)
	await := func(what string, cond func() bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) { return cond(), nil })
		require.NoError(t, err, what)
	}
	reported := func(name string) func() bool {
		return func() bool {
			app, err := apps.Get(ctx, ns, name, metav1.GetOptions{})
			return err == nil && meta.FindStatusCondition(app.Status.Conditions, webappv1.ConditionReady) != nil
		}
	}
	create := func(name string) {
		t.Helper()
		_, err := apps.Create(ctx, &webappv1.WebApp{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: webappv1.WebAppSpec{Image: "nginx:1.27"}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	create("shop")
	await("shop's status written with the shipped rules", reported("shop"))

	patchStatus := rbactest.Access{Verb: "patch", Group: webappv1.GroupName, Resource: webappv1.Plural, Subresource: "status"}
	restore := in.Revoke("ClusterRole", "ctrlkit-webapp", patchStatus)
	create("blog")
	await("the refusal logged on two attempts", func() bool { return len(in.ForbiddenLines(log.String(), patchStatus)) >= 2 })
	restore()
	await("blog's status written once the rule is back", reported("blog"))

	require.NoError(t, apps.Delete(ctx, ns, "shop", metav1.DeleteOptions{}))
	await("the finalizer ran and shop is gone", func() bool {
		_, err := apps.Get(ctx, ns, "shop", metav1.GetOptions{})
		_, regErr := env.Client().CoreV1().ConfigMaps(RegistryNamespace).Get(ctx, ns+".shop", metav1.GetOptions{})
		return apierrors.IsNotFound(err) && apierrors.IsNotFound(regErr)
	})
}
