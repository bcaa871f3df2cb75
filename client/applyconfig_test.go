package client_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// Two managers each apply the part of an object they own, through client-go's apply
// configurations, on the fake cluster as on kube-apiserver: neither claims the other's fields,
// so neither conflicts, and each keeps its own.
func TestApplyConfig(t *testing.T) {
	for name, newEnv := range backends {
		t.Run(name, func(t *testing.T) {
			env := newEnv(t)
			ctx, ns := env.Context(), env.Namespace()
			cms := mustFor[*corev1.ConfigMap](t, env)

			got, err := client.ApplyConfig(ctx, cms, corev1ac.ConfigMap("cfg", ns).WithData(map[string]string{"a": "1"}),
				metav1.ApplyOptions{FieldManager: "data-owner"})
			require.NoError(t, err)
			assert.Equal(t, map[string]string{"a": "1"}, got.Data)
			got, err = client.ApplyConfig(ctx, cms, corev1ac.ConfigMap("cfg", ns).WithLabels(map[string]string{"team": "x"}),
				metav1.ApplyOptions{FieldManager: "labeller"})
			require.NoError(t, err, "the labeller claims no data")
			assert.Equal(t, map[string]string{"a": "1"}, got.Data)
			assert.Equal(t, "x", got.Labels["team"])
			assert.Equal(t, map[string]metav1.ManagedFieldsOperationType{
				"data-owner": metav1.ManagedFieldsOperationApply, "labeller": metav1.ManagedFieldsOperationApply,
			}, managers(got))

			// The data owner drops a key by applying without it; the labels stay.
			got, err = client.ApplyConfig(ctx, cms, corev1ac.ConfigMap("cfg", ns).WithData(map[string]string{"b": "2"}),
				metav1.ApplyOptions{FieldManager: "data-owner"})
			require.NoError(t, err)
			assert.Equal(t, map[string]string{"b": "2"}, got.Data)
			assert.Equal(t, "x", got.Labels["team"])

			// Another manager setting an owned field conflicts unless it forces.
			_, err = client.ApplyConfig(ctx, cms, corev1ac.ConfigMap("cfg", ns).WithData(map[string]string{"b": "3"}),
				metav1.ApplyOptions{FieldManager: "labeller"})
			require.True(t, apierrors.IsConflict(err), "got %v", err)
		})
	}
}

// The status subresource takes an apply configuration of the status alone; the spec's owner
// keeps the spec.
func TestApplyConfigStatus(t *testing.T) {
	for name, newEnv := range backends {
		t.Run(name, func(t *testing.T) {
			env := newEnv(t)
			ctx, ns := env.Context(), env.Namespace()
			deps := mustFor[*appsv1.Deployment](t, env)
			labels := map[string]string{"app": "web"}
			spec := appsv1ac.DeploymentSpec().WithReplicas(2).
				WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
				WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).
					WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName("web").WithImage("nginx"))))
			_, err := client.ApplyConfig(ctx, deps, appsv1ac.Deployment("web", ns).WithSpec(spec), metav1.ApplyOptions{FieldManager: "ctrl"})
			require.NoError(t, err)
			got, err := client.ApplyConfig(ctx, deps, appsv1ac.Deployment("web", ns).WithStatus(appsv1ac.DeploymentStatus().WithReplicas(2).WithReadyReplicas(1)),
				metav1.ApplyOptions{FieldManager: "ctrl-status"}, "status")
			require.NoError(t, err)
			assert.Equal(t, int32(1), got.Status.ReadyReplicas)
			assert.Equal(t, ptr.To[int32](2), got.Spec.Replicas)
		})
	}
}

func TestApplyConfigRefusesBadInput(t *testing.T) {
	env := backends["fake"](t)
	ctx, ns := env.Context(), env.Namespace()
	cms := mustFor[*corev1.ConfigMap](t, env)
	nodes := mustFor[*corev1.Node](t, env)
	owner := metav1.ApplyOptions{FieldManager: "m"}
	for name, call := range map[string]func() error{
		"nil config": func() error {
			_, err := client.ApplyConfig(ctx, cms, (*corev1ac.ConfigMapApplyConfiguration)(nil), owner)
			return err
		},
		"no field manager": func() error {
			_, err := client.ApplyConfig(ctx, cms, corev1ac.ConfigMap("a", ns), metav1.ApplyOptions{})
			return err
		},
		"no name": func() error {
			_, err := client.ApplyConfig(ctx, cms, corev1ac.ConfigMap("", ns), owner)
			return err
		},
		"no namespace": func() error {
			_, err := client.ApplyConfig(ctx, cms, corev1ac.ConfigMap("a", ""), owner)
			return err
		},
		"a namespace on a cluster-scoped resource": func() error {
			_, err := client.ApplyConfig(ctx, nodes, corev1ac.Node("n").WithNamespace(ns), owner)
			return err
		},
		"another kind": func() error {
			_, err := client.ApplyConfig(ctx, cms, corev1ac.Secret("a", ns), owner)
			return err
		},
	} {
		err := call()
		assert.ErrorIs(t, err, client.ErrInvalidInput, name)
	}
	_, err := cms.Get(ctx, ns, "a", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "nothing was written")
}

// podSetApply is an apply configuration of a custom resource written by hand, the shape
// applyconfiguration-gen generates: every field optional.
type podSetApply struct {
	metav1ac.TypeMetaApplyConfiguration    `json:",inline"`
	*metav1ac.ObjectMetaApplyConfiguration `json:"metadata,omitempty"`
	Spec                                   *podSetSpecApply `json:"spec,omitempty"`
}

type podSetSpecApply struct {
	Replicas *int32 `json:"replicas,omitempty"`
}

func (podSetApply) IsApplyConfiguration() {}

// A custom resource's apply configuration goes through the custom resource's client alike: a
// scaler owning only spec.replicas leaves the rest to the manager that created the object.
func TestApplyConfigOnACustomResourceOnAPIServer(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ctx, ns := env.Context(), env.Namespace()
	require.NoError(t, customresource.EnsureCRDFromYAML(ctx, env.Dynamic(), v1alpha1.CRDManifest))
	podsets, err := customresource.NewClient[*v1alpha1.PodSet](env.Dynamic(), v1alpha1.GVR)
	require.NoError(t, err)
	labels := map[string]string{"app": "web"}
	_, err = podsets.Create(ctx, &v1alpha1.PodSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: v1alpha1.PodSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}},
	}, metav1.CreateOptions{FieldManager: "creator"})
	require.NoError(t, err)

	scale := &podSetApply{ObjectMetaApplyConfiguration: metav1ac.ObjectMeta().WithName("web").WithNamespace(ns),
		Spec: &podSetSpecApply{Replicas: ptr.To[int32](3)}}
	got, err := client.ApplyConfig(ctx, client.Client[*v1alpha1.PodSet](podsets), scale,
		metav1.ApplyOptions{FieldManager: "scaler", Force: true})
	require.NoError(t, err)
	assert.Equal(t, int32(3), *got.Spec.Replicas)
	assert.Equal(t, labels, got.Spec.Selector.MatchLabels, "the creator's fields are kept")
	assert.Contains(t, managers(got), "scaler")
	assert.Contains(t, managers(got), "creator")
}

// A client of WithFieldOwner writes as its owner: creates, updates and applies (through
// ApplyConfig too, and through a cached client over it) carry the owner unless the call names
// another.
func TestWithFieldOwner(t *testing.T) {
	for name, newEnv := range backends {
		t.Run(name, func(t *testing.T) {
			env := newEnv(t)
			ctx, ns := env.Context(), env.Namespace()
			owned, err := client.WithFieldOwner(mustFor[*corev1.ConfigMap](t, env), "my-controller")
			require.NoError(t, err)

			created, err := owned.Create(ctx, configMap(ns, "a", map[string]string{"k": "v"}), metav1.CreateOptions{})
			require.NoError(t, err)
			assert.Equal(t, map[string]metav1.ManagedFieldsOperationType{"my-controller": metav1.ManagedFieldsOperationUpdate}, managers(created))

			applied, err := client.ApplyConfig(ctx, owned, corev1ac.ConfigMap("b", ns).WithData(map[string]string{"k": "v"}), metav1.ApplyOptions{})
			require.NoError(t, err, "the owner is the field manager ApplyConfig requires")
			assert.Equal(t, map[string]metav1.ManagedFieldsOperationType{"my-controller": metav1.ManagedFieldsOperationApply}, managers(applied))

			typed, err := owned.Apply(ctx, configMap(ns, "c", map[string]string{"k": "v"}), metav1.ApplyOptions{})
			require.NoError(t, err)
			assert.Contains(t, managers(typed), "my-controller")

			other, err := client.ApplyConfig(ctx, owned, corev1ac.ConfigMap("b", ns).WithLabels(map[string]string{"x": "y"}), metav1.ApplyOptions{FieldManager: "someone-else"})
			require.NoError(t, err)
			assert.Contains(t, managers(other), "someone-else", "a field manager named in the call wins")

			cached, err := client.NewCached(owned, emptyLister[*corev1.ConfigMap]{})
			require.NoError(t, err)
			_, err = client.ApplyConfig(ctx, cached, corev1ac.ConfigMap("d", ns).WithData(map[string]string{"k": "v"}), metav1.ApplyOptions{})
			require.NoError(t, err, "a cached client passes its writer's owner on")
		})
	}
	_, err := client.WithFieldOwner(client.Client[*corev1.ConfigMap](nil), "x")
	assert.ErrorIs(t, err, client.ErrInvalidInput)
	_, err = client.WithFieldOwner(mustFor[*corev1.ConfigMap](t, backends["fake"](t)), "")
	assert.ErrorIs(t, err, client.ErrInvalidInput)
}

// emptyLister is a Lister with nothing in it.
type emptyLister[T client.Object] struct{}

func (emptyLister[T]) Get(namespace, name string) (T, error) {
	var zero T
	return zero, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (emptyLister[T]) List(labels.Selector) ([]T, error) { return nil, nil }
