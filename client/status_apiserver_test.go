package client_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/testkit"
)

func webTemplate() (*metav1.LabelSelector, corev1.PodTemplateSpec) {
	labels := map[string]string{"app": "web"}
	return &metav1.LabelSelector{MatchLabels: labels}, corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}
}

// On a real server: the status subresource takes the patch, a second pass leaves the
// resourceVersion as it was (nothing written), and a stale object causes no Conflict.
func TestPatchStatusOnAPIServer(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ctx, ns := env.Context(), env.Namespace()
	deps := mustFor[*appsv1.Deployment](t, env)
	sel, tmpl := webTemplate()
	created, err := deps.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: new(int32(2)), Selector: sel, Template: tmpl}}, metav1.CreateOptions{})
	require.NoError(t, err)
	counts := func(replicas, ready int32) func(*appsv1.Deployment) error {
		return func(d *appsv1.Deployment) error {
			d.Status.Replicas, d.Status.ReadyReplicas = replicas, ready
			return nil
		}
	}

	out, res, err := client.PatchStatus(ctx, deps, created, counts(2, 2))
	require.NoError(t, err)
	require.Equal(t, client.OperationResultUpdatedStatusOnly, res)
	assert.Equal(t, int32(2), out.Status.ReadyReplicas)
	assert.Equal(t, created.Generation, out.Status.ObservedGeneration)

	_, res, err = client.PatchStatus(ctx, deps, out, counts(2, 2))
	require.NoError(t, err)
	assert.Equal(t, client.OperationResultNone, res)
	stored, err := deps.Get(ctx, ns, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, out.ResourceVersion, stored.ResourceVersion, "nothing written")

	// created is stale by one write: no Conflict, and the server ends with what mutate said.
	out, res, err = client.PatchStatus(ctx, deps, created, counts(2, 1))
	require.NoError(t, err)
	require.Equal(t, client.OperationResultUpdatedStatusOnly, res)
	assert.Equal(t, int32(2), out.Status.Replicas)
	assert.Equal(t, int32(1), out.Status.ReadyReplicas)
}

// A custom resource's status subresource on a real server, conditions included.
func TestPatchStatusCustomResourceOnAPIServer(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ctx, ns := env.Context(), env.Namespace()
	require.NoError(t, customresource.EnsureCRDFromYAML(ctx, env.Dynamic(), v1alpha1.CRDManifest))
	podsets, err := customresource.NewClient[*v1alpha1.PodSet](env.Dynamic(), v1alpha1.GVR)
	require.NoError(t, err)
	sel, tmpl := webTemplate()
	created, err := podsets.Create(ctx, &v1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: v1alpha1.PodSetSpec{Replicas: new(int32(2)), Selector: sel, Template: tmpl}}, metav1.CreateOptions{})
	require.NoError(t, err)
	ready := func(status metav1.ConditionStatus) func(*v1alpha1.PodSet) error {
		return func(ps *v1alpha1.PodSet) error {
			meta.SetStatusCondition(&ps.Status.Conditions, metav1.Condition{Type: "Ready", Status: status, Reason: "Counted", Message: "counted"})
			return nil
		}
	}

	out, res, err := client.PatchStatus(ctx, podsets, created, ready(metav1.ConditionTrue))
	require.NoError(t, err)
	require.Equal(t, client.OperationResultUpdatedStatusOnly, res)
	assert.Equal(t, created.Generation, out.Status.ObservedGeneration)
	require.Len(t, out.Status.Conditions, 1)
	assert.Equal(t, created.Generation, out.Status.Conditions[0].ObservedGeneration)

	_, res, err = client.PatchStatus(ctx, podsets, out, ready(metav1.ConditionTrue))
	require.NoError(t, err)
	assert.Equal(t, client.OperationResultNone, res, "the condition's time is kept by meta.SetStatusCondition")
	stored, err := podsets.Get(ctx, ns, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, out.ResourceVersion, stored.ResourceVersion, "nothing written")

	out, res, err = client.PatchStatus(ctx, podsets, created, ready(metav1.ConditionFalse))
	require.NoError(t, err, "a stale object is no Conflict")
	require.Equal(t, client.OperationResultUpdatedStatusOnly, res)
	require.Len(t, out.Status.Conditions, 1)
	assert.Equal(t, metav1.ConditionFalse, out.Status.Conditions[0].Status)
}
