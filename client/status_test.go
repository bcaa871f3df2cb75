package client_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/internal/fencehook"
	"github.com/ctrlkit/ctrlkit/testkit"
)

func deployment(ns, name string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.DeploymentSpec{Replicas: new(int32(2))}}
}

func readyReplicas(n int32) func(*appsv1.Deployment) error {
	return func(d *appsv1.Deployment) error {
		d.Status.ReadyReplicas = n
		return nil
	}
}

// A built-in type: the status is patched through /status with only what changed and no
// resourceVersion, observedGeneration is set, obj is left alone, and an unchanged status sends
// nothing.
func TestPatchStatusBuiltIn(t *testing.T) {
	env := testkit.NewFake(t, deployment("default", "web"))
	ctx := env.Context()
	deps := mustFor[*appsv1.Deployment](t, env.Env)
	cached, err := deps.Get(ctx, "default", "web", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, int64(1), cached.Generation)
	original := cached.DeepCopy()
	env.ClearActions()

	out, res, err := client.PatchStatus(ctx, deps, cached, readyReplicas(2))
	require.NoError(t, err)
	assert.Equal(t, client.OperationResultUpdatedStatusOnly, res)
	assert.Equal(t, []string{`status {"status":{"observedGeneration":1,"readyReplicas":2}}`}, patchBodies(t, env))
	assert.Equal(t, int32(2), out.Status.ReadyReplicas)
	assert.Equal(t, int64(1), out.Status.ObservedGeneration)
	assert.NotEqual(t, cached.ResourceVersion, out.ResourceVersion, "out is the server's answer")
	assert.Equal(t, original, cached, "obj is never modified")

	env.ClearActions()
	again, res, err := client.PatchStatus(ctx, deps, out, readyReplicas(2))
	require.NoError(t, err)
	assert.Equal(t, client.OperationResultNone, res)
	assert.Same(t, out, again, "nothing sent: obj itself")
	assert.Empty(t, env.Actions(), "an unchanged status sends no request")

	// A stale object (the cache before the first write) is no Conflict: the patch has no
	// precondition, and sends what differs from the stale copy.
	out, res, err = client.PatchStatus(ctx, deps, cached, readyReplicas(3))
	require.NoError(t, err)
	assert.Equal(t, client.OperationResultUpdatedStatusOnly, res)
	assert.Equal(t, int32(3), out.Status.ReadyReplicas)
	assert.Equal(t, int64(1), out.Status.ObservedGeneration)

	// A spec change bumps the generation: the same status is written again for it.
	spec := out.DeepCopy()
	spec.Spec.Replicas = new(int32(3))
	updated, err := deps.Update(ctx, spec, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Equal(t, int64(2), updated.Generation)
	env.ClearActions()
	out, res, err = client.PatchStatus(ctx, deps, updated, readyReplicas(3))
	require.NoError(t, err)
	assert.Equal(t, client.OperationResultUpdatedStatusOnly, res)
	assert.Equal(t, []string{`status {"status":{"observedGeneration":2}}`}, patchBodies(t, env))
	assert.Equal(t, int64(2), out.Status.ObservedGeneration)

	// A nil mutate records the generation only, here already recorded.
	_, res, err = client.PatchStatus(ctx, deps, out, nil)
	require.NoError(t, err)
	assert.Equal(t, client.OperationResultNone, res)
}

// A custom resource through customresource.Client: every metav1.Condition gets the
// generation, meta.SetStatusCondition keeps an unchanged condition equal, so the second pass
// writes nothing.
func TestPatchStatusCustomResource(t *testing.T) {
	env := podSetEnv(t)
	ctx := env.Context()
	podsets, err := customresource.NewClient[*v1alpha1.PodSet](env.Dynamic(), v1alpha1.GVR)
	require.NoError(t, err)
	ps, err := podsets.Create(ctx, &v1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	ready := func(ps *v1alpha1.PodSet) error {
		ps.Status.ReadyReplicas = 2
		meta.SetStatusCondition(&ps.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "AllReady", Message: "2 of 2 ready"})
		return nil
	}

	out, res, err := client.PatchStatus(ctx, podsets, ps, ready)
	require.NoError(t, err)
	assert.Equal(t, client.OperationResultUpdatedStatusOnly, res)
	assert.Equal(t, int64(1), out.Status.ObservedGeneration)
	require.Len(t, out.Status.Conditions, 1)
	assert.Equal(t, int64(1), out.Status.Conditions[0].ObservedGeneration, "the condition records the generation too")
	assert.Empty(t, ps.Status.Conditions, "obj is never modified")

	env.ClearActions()
	_, res, err = client.PatchStatus(ctx, podsets, out, ready)
	require.NoError(t, err)
	assert.Equal(t, client.OperationResultNone, res)
	assert.Empty(t, env.Actions())

	// Conditions mutate left alone still get a new generation.
	spec := out.DeepCopy()
	spec.Spec.Replicas = new(int32(5))
	bumped, err := podsets.Update(ctx, spec, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Equal(t, int64(2), bumped.Generation)
	out, res, err = client.PatchStatus(ctx, podsets, bumped, nil)
	require.NoError(t, err)
	assert.Equal(t, client.OperationResultUpdatedStatusOnly, res)
	assert.Equal(t, int64(2), out.Status.ObservedGeneration)
	assert.Equal(t, int64(2), out.Status.Conditions[0].ObservedGeneration)
	assert.Equal(t, bumped.Status.Conditions[0].LastTransitionTime, out.Status.Conditions[0].LastTransitionTime, "the condition's status did not change")
}

// An ObservedGeneration of type *int64 (autoscaling/v2's HorizontalPodAutoscaler) is set too.
func TestPatchStatusPointerObservedGeneration(t *testing.T) {
	env := testkit.NewFake(t, &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 3}})
	ctx := env.Context()
	hpas := mustFor[*autoscalingv2.HorizontalPodAutoscaler](t, env.Env)
	hpa, err := hpas.Get(ctx, "default", "web", metav1.GetOptions{})
	require.NoError(t, err)
	out, res, err := client.PatchStatus(ctx, hpas, hpa, func(h *autoscalingv2.HorizontalPodAutoscaler) error {
		h.Status.DesiredReplicas = 2
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, client.OperationResultUpdatedStatusOnly, res)
	require.NotNil(t, out.Status.ObservedGeneration)
	assert.Equal(t, hpa.Generation, *out.Status.ObservedGeneration)
	assert.Nil(t, hpa.Status.ObservedGeneration, "obj is never modified")
}

// Bad input fails before any request, with an error that says what is wrong.
func TestPatchStatusErrors(t *testing.T) {
	env := testkit.NewFake(t, configMap("default", "cm", nil), deployment("default", "web"))
	ctx := env.Context()
	cms := mustFor[*corev1.ConfigMap](t, env.Env)
	deps := mustFor[*appsv1.Deployment](t, env.Env)
	cm, err := cms.Get(ctx, "default", "cm", metav1.GetOptions{})
	require.NoError(t, err)
	dep, err := deps.Get(ctx, "default", "web", metav1.GetOptions{})
	require.NoError(t, err)
	env.ClearActions()

	out, _, err := client.PatchStatus(ctx, cms, cm, nil)
	require.ErrorIs(t, err, client.ErrNoStatus)
	assert.ErrorContains(t, err, "*k8s.io/api/core/v1.ConfigMap has no Status field")
	assert.Same(t, cm, out, "obj is returned on errors")

	_, _, err = client.PatchStatus[*appsv1.Deployment](ctx, nil, dep, nil)
	require.ErrorIs(t, err, client.ErrInvalidInput)
	_, _, err = client.PatchStatus(ctx, deps, nil, nil)
	require.ErrorIs(t, err, client.ErrInvalidInput)
	assert.ErrorContains(t, err, "deployments.apps")

	boom := errors.New("boom")
	_, _, err = client.PatchStatus(ctx, deps, dep, func(*appsv1.Deployment) error { return boom })
	require.ErrorIs(t, err, boom)
	_, _, err = client.PatchStatus(ctx, deps, dep, func(d *appsv1.Deployment) error {
		d.Name = "other"
		return nil
	})
	require.ErrorIs(t, err, client.ErrKeyChanged)
	assert.Empty(t, env.Actions(), "no request for bad input")

	// Gone: the server's NotFound, for IgnoreNotFound.
	require.NoError(t, deps.Delete(ctx, "default", "web", metav1.DeleteOptions{}))
	_, res, err := client.PatchStatus(ctx, deps, dep, readyReplicas(1))
	assert.True(t, apierrors.IsNotFound(err), "got %v", err)
	assert.Equal(t, client.OperationResultNone, res)
}

// writes records the writes reported to a Reconcile's fence recorder.
type writes struct{ rvs []string }

func (w *writes) Written(_ schema.GroupResource, obj metav1.Object) {
	w.rvs = append(w.rvs, obj.GetResourceVersion())
}
func (w *writes) Deleted(schema.GroupResource, string, string) {}

// The status write goes through c.Patch and so reports itself to the controller's fences like
// every other write; a pass that writes nothing reports nothing.
func TestPatchStatusIsFenced(t *testing.T) {
	env := testkit.NewFake(t, deployment("default", "web"))
	deps := mustFor[*appsv1.Deployment](t, env.Env)
	var w writes
	ctx := fencehook.With(env.Context(), &w)
	dep, err := deps.Get(ctx, "default", "web", metav1.GetOptions{})
	require.NoError(t, err)

	out, _, err := client.PatchStatus(ctx, deps, dep, readyReplicas(1))
	require.NoError(t, err)
	assert.Equal(t, []string{out.ResourceVersion}, w.rvs)
	_, _, err = client.PatchStatus(ctx, deps, out, readyReplicas(1))
	require.NoError(t, err)
	assert.Len(t, w.rvs, 1)

}
