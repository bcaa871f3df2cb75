package main

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/customresource"
	webappv1 "github.com/ctrlkit/ctrlkit/examples/webapp/api/v1"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// The journey on a real kube-apiserver, with the generated CRD installed (its defaults and
// validation apply) and the Manager built as main builds it, from a config: its dynamic
// client, owner references, the finalizer and the status subresource as the server
// implements them.
func TestWebAppOnTheAPIServer(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ctx := env.Context()
	require.NoError(t, customresource.EnsureCRDFromYAML(ctx, env.Dynamic(), webappv1.CRDManifest))
	_, err := env.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: RegistryNamespace}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	mgr, err := manager.New(manager.Options{Config: env.Config(), Factory: env.Factory()})
	require.NoError(t, err)
	journey(t, env, mgr)

	// The CRD's schema, generated from the markers, is enforced: an empty image is refused,
	// and what is left out is defaulted.
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
