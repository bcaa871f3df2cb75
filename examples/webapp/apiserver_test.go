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

	schemaIsEnforced(t, env, mgr)
}
