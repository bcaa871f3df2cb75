package testkit_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/testkit"
)

// A delete that only marks an object (it has finalizers) bumps metadata.generation on
// kube-apiserver, once; the fake must do the same, or a controller filtering on
// predicate.GenerationChanged runs its finalizer on the server and never on the fake.
func TestGracefulDeleteBumpsGenerationOnce(t *testing.T) {
	for name, newEnv := range map[string]func(testing.TB) *testkit.Env{
		"fake":      func(t testing.TB) *testkit.Env { return testkit.NewFake(t).Env },
		"apiserver": func(t testing.TB) *testkit.Env { return testkit.SharedAPIServer(t) },
	} {
		t.Run(name, func(t *testing.T) {
			env := newEnv(t)
			ctx, ns := env.Context(), env.Namespace()
			deps := env.Client().AppsV1().Deployments(ns)
			labels := map[string]string{"app": "guarded"}
			d, err := deps.Create(ctx, &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "guarded", Finalizers: []string{"example.com/cleanup"}},
				Spec: appsv1.DeploymentSpec{
					Replicas: ptr.To[int32](0),
					Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: labels},
						Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
					},
				},
			}, metav1.CreateOptions{})
			require.NoError(t, err)
			require.Equal(t, int64(1), d.Generation)

			require.NoError(t, deps.Delete(ctx, "guarded", metav1.DeleteOptions{}))
			d, err = deps.Get(ctx, "guarded", metav1.GetOptions{})
			require.NoError(t, err, "kept by its finalizer")
			require.NotNil(t, d.DeletionTimestamp)
			assert.Equal(t, int64(2), d.Generation, "marking for deletion is a change of generation")

			require.NoError(t, deps.Delete(ctx, "guarded", metav1.DeleteOptions{}))
			d, err = deps.Get(ctx, "guarded", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, int64(2), d.Generation, "a second delete changes nothing")

			d.Finalizers = nil
			_, err = deps.Update(ctx, d, metav1.UpdateOptions{})
			require.NoError(t, err)
		})
	}
}
