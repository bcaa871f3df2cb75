package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/customresource"
	webappv1 "github.com/ctrlkit/ctrlkit/examples/webapp/api/v1"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/testkit"
)

const finalizerName = "examples.ctrlkit.dev/registry"

// journey is the operator's life as its user sees it, on any cluster: a WebApp gets its
// Deployment, Service and registry entry and a status; the status follows the Deployment's
// readiness; a hand edit of the Deployment is repaired; deleting the WebApp removes its
// registry entry (the finalizer) before the WebApp goes. Each step polls the world with a
// deadline, as a user with kubectl would.
func journey(t *testing.T, env *testkit.Env, mgr *manager.Manager) {
	ctx, ns := env.Context(), env.Namespace()
	c, err := NewWebAppController(mgr)
	require.NoError(t, err)
	apps, err := customresource.NewClient[*webappv1.WebApp](env.Dynamic(), webappv1.GVR)
	require.NoError(t, err)
	env.RunController(ctx, c)
	deps, svcs := env.Client().AppsV1().Deployments(ns), env.Client().CoreV1().Services(ns)
	registry := env.Client().CoreV1().ConfigMaps(RegistryNamespace)
	eventually := func(what string, check func(c *assert.CollectT)) {
		t.Helper()
		require.EventuallyWithT(t, check, 30*time.Second, 20*time.Millisecond, what)
	}

	_, err = apps.Create(ctx, &webappv1.WebApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
		// Port is left to the CRD's default (8080), which the fake applies as the server does.
		Spec: webappv1.WebAppSpec{Image: "nginx:1.27", Replicas: ptr.To[int32](2)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	eventually("a Deployment, a Service, a registry entry and a status", func(c *assert.CollectT) {
		app, err := apps.Get(ctx, ns, "shop", metav1.GetOptions{})
		require.NoError(c, err)
		dep, err := deps.Get(ctx, "shop", metav1.GetOptions{})
		require.NoError(c, err)
		assert.Equal(c, "nginx:1.27", dep.Spec.Template.Spec.Containers[0].Image)
		assert.Equal(c, int32(2), *dep.Spec.Replicas)
		assert.True(c, metav1.IsControlledBy(dep, app), "the WebApp owns its Deployment")
		svc, err := svcs.Get(ctx, "shop", metav1.GetOptions{})
		require.NoError(c, err)
		assert.Equal(c, int32(8080), svc.Spec.Ports[0].Port)
		assert.True(c, metav1.IsControlledBy(svc, app), "and its Service")
		entry, err := registry.Get(ctx, ns+".shop", metav1.GetOptions{})
		require.NoError(c, err)
		assert.Equal(c, map[string]string{"service": "shop." + ns, "port": "8080"}, entry.Data)
		assert.Equal(c, []string{finalizerName}, app.Finalizers)
		assert.Equal(c, app.Generation, app.Status.ObservedGeneration)
		ready := meta.FindStatusCondition(app.Status.Conditions, webappv1.ConditionReady)
		require.NotNil(c, ready)
		assert.Equal(c, metav1.ConditionFalse, ready.Status, "no Pod is ready yet")
		assert.Equal(c, app.Generation, ready.ObservedGeneration)
	})

	// The Deployment's Pods become ready. There is no kubelet or Deployment controller here:
	// the status is written for them.
	dep, err := deps.Get(ctx, "shop", metav1.GetOptions{})
	require.NoError(t, err)
	dep.Status.Replicas, dep.Status.ReadyReplicas = 2, 2
	_, err = deps.UpdateStatus(ctx, dep, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually("the WebApp reports its ready replicas", func(c *assert.CollectT) {
		app, err := apps.Get(ctx, ns, "shop", metav1.GetOptions{})
		require.NoError(c, err)
		assert.Equal(c, int32(2), app.Status.ReadyReplicas)
		assert.True(c, meta.IsStatusConditionTrue(app.Status.Conditions, webappv1.ConditionReady))
	})

	// A spec change reaches the Deployment, and a hand edit of the Deployment is undone.
	app, err := apps.Get(ctx, ns, "shop", metav1.GetOptions{})
	require.NoError(t, err)
	app.Spec.Image = "nginx:1.28"
	_, err = apps.Update(ctx, app, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually("the new image is rolled out", func(c *assert.CollectT) {
		dep, err := deps.Get(ctx, "shop", metav1.GetOptions{})
		require.NoError(c, err)
		assert.Equal(c, "nginx:1.28", dep.Spec.Template.Spec.Containers[0].Image)
		app, err := apps.Get(ctx, ns, "shop", metav1.GetOptions{})
		require.NoError(c, err)
		assert.Equal(c, app.Generation, app.Status.ObservedGeneration)
	})
	dep, err = deps.Get(ctx, "shop", metav1.GetOptions{})
	require.NoError(t, err)
	dep.Spec.Template.Spec.Containers[0].Image = "nginx:edited-by-hand"
	_, err = deps.Update(ctx, dep, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually("the hand edit is repaired", func(c *assert.CollectT) {
		dep, err := deps.Get(ctx, "shop", metav1.GetOptions{})
		require.NoError(c, err)
		assert.Equal(c, "nginx:1.28", dep.Spec.Template.Spec.Containers[0].Image)
	})

	require.NoError(t, apps.Delete(ctx, ns, "shop", metav1.DeleteOptions{}))
	eventually("the finalizer removes the registry entry, then the WebApp goes", func(c *assert.CollectT) {
		_, err := registry.Get(ctx, ns+".shop", metav1.GetOptions{})
		assert.True(c, apierrors.IsNotFound(err), "registry entry: %v", err)
		_, err = apps.Get(ctx, ns, "shop", metav1.GetOptions{})
		assert.True(c, apierrors.IsNotFound(err), "WebApp: %v", err)
	})
}

func TestWebAppOnTheFakeCluster(t *testing.T) {
	// The generated CRD, schema included: the fake prunes, defaults and validates WebApps with it
	// as kube-apiserver does.
	env := testkit.NewFakeWithOptions(t, testkit.FakeOptions{CRDs: [][]byte{webappv1.CRDManifest}})
	mgr, err := manager.New(manager.Options{Client: env.Client(), Dynamic: env.Dynamic(), Factory: env.Factory()})
	require.NoError(t, err)
	journey(t, env.Env, mgr)
	schemaIsEnforced(t, env.Env, mgr)
	env.WaitForQuiet(30 * time.Second)
}

// schemaIsEnforced checks that the CRD's schema, generated from the markers, applies: an empty
// image is refused, and what is left out is defaulted.
func schemaIsEnforced(t *testing.T, env *testkit.Env, mgr *manager.Manager) {
	ctx := env.Context()
	apps, err := customresource.NewClient[*webappv1.WebApp](mgr.Dynamic(), webappv1.GVR)
	require.NoError(t, err)
	_, err = apps.Create(ctx, &webappv1.WebApp{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(), Name: "no-image"}}, metav1.CreateOptions{})
	require.True(t, apierrors.IsInvalid(err), "an empty image is invalid: %v", err)
	app, err := apps.Create(ctx, &webappv1.WebApp{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(), Name: "defaults"},
		Spec: webappv1.WebAppSpec{Image: "nginx"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Equal(t, int32(1), *app.Spec.Replicas)
	require.Equal(t, int32(8080), app.Spec.Port)
}

// The README's "Your first operator" walks through these two files in docs/first-operator.md,
// which shows them as they are: a change to either that is not copied there fails here, so the
// guide's operator always compiles and passes the tests.
func TestREADMEShowsThisOperator(t *testing.T) {
	guide, err := os.ReadFile("../../docs/first-operator.md")
	require.NoError(t, err)
	for _, file := range []string{"controller.go", "main.go"} {
		src, err := os.ReadFile(file)
		require.NoError(t, err)
		assert.True(t, strings.Contains(string(guide), "```go\n"+string(src)+"```"),
			"docs/first-operator.md does not show examples/webapp/%s as it is", file)
	}
}
