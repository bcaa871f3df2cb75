package v1_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/customresource"
	webappv1 "github.com/ctrlkit/ctrlkit/examples/webapp/api/v1"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// The generated CRD on a real kube-apiserver: it is accepted (structural), defaults
// spec.replicas and spec.port, enforces the markers' validation, and takes status through
// its subresource only.
func TestGeneratedCRDOnAPIServer(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ctx, ns := env.Context(), env.Namespace()
	require.NoError(t, customresource.EnsureCRDFromYAML(ctx, env.Dynamic(), webappv1.CRDManifest))
	apps, err := customresource.NewClient[*webappv1.WebApp](env.Dynamic(), webappv1.GVR)
	require.NoError(t, err)

	app, err := apps.Create(ctx, &webappv1.WebApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
		Spec:       webappv1.WebAppSpec{Image: "nginx:1.27"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Equal(t, int32(1), *app.Spec.Replicas, "defaulted")
	require.Equal(t, int32(8080), app.Spec.Port, "defaulted")

	for name, spec := range map[string]webappv1.WebAppSpec{
		"empty image":       {Image: ""},
		"negative replicas": {Image: "nginx", Replicas: new(int32(-1))},
		"port too large":    {Image: "nginx", Port: 65536},
	} {
		_, err := apps.Create(ctx, &webappv1.WebApp{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "bad-"}, Spec: spec}, metav1.CreateOptions{})
		require.True(t, apierrors.IsInvalid(err), "%s: %v", name, err)
	}

	// Status goes through /status: an update of the object ignores it, UpdateStatus keeps
	// it, and neither a status write nor a condition bumps the generation.
	app.Status.ReadyReplicas = 1
	app.Status.ObservedGeneration = app.Generation
	meta.SetStatusCondition(&app.Status.Conditions, metav1.Condition{Type: webappv1.ConditionReady,
		Status: metav1.ConditionTrue, Reason: "ReplicasReady", ObservedGeneration: app.Generation})
	updated, err := apps.Update(ctx, app, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Empty(t, updated.Status.Conditions, "the main resource ignores status")
	app.ResourceVersion = updated.ResourceVersion
	updated, err = apps.UpdateStatus(ctx, app, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Equal(t, app.Generation, updated.Generation)
	require.True(t, meta.IsStatusConditionTrue(updated.Status.Conditions, webappv1.ConditionReady))
	require.Equal(t, int32(1), updated.Status.ReadyReplicas)

	// Conditions are a map keyed by type: a second Ready is refused.
	updated.Status.Conditions = append(updated.Status.Conditions, updated.Status.Conditions[0])
	_, err = apps.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	require.True(t, apierrors.IsInvalid(err), "%v", err)
}
