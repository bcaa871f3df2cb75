package client_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/testkit"
)

func setData(k, v string) func(*corev1.ConfigMap) error {
	return func(cm *corev1.ConfigMap) error {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[k] = v
		return nil
	}
}

func TestCreateOrUpdate(t *testing.T) {
	env := testkit.NewFake(t)
	ctx := env.Context()
	cms := mustFor[*corev1.ConfigMap](t, env.Env)

	cm := configMap("default", "a", nil)
	res, err := client.CreateOrUpdate(ctx, cms, cm, setData("k", "1"))
	require.NoError(t, err)
	require.Equal(t, client.OperationResultCreated, res)
	require.NotEmpty(t, cm.UID, "obj holds the created object")
	require.Equal(t, "1", cm.Data["k"])

	env.ClearActions()
	res, err = client.CreateOrUpdate(ctx, cms, configMap("default", "a", nil), setData("k", "1"))
	require.NoError(t, err)
	require.Equal(t, client.OperationResultNone, res)
	require.Len(t, env.Actions(), 1, "only the get")

	cm = configMap("default", "a", nil)
	res, err = client.CreateOrUpdate(ctx, cms, cm, setData("k", "2"))
	require.NoError(t, err)
	require.Equal(t, client.OperationResultUpdated, res)
	require.Equal(t, "2", cm.Data["k"])
	got, err := cms.Get(ctx, "default", "a", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, got, cm, "obj holds the updated object")

	// A nil mutate only ensures the object exists.
	res, err = client.CreateOrUpdate(ctx, cms, configMap("default", "b", nil), nil)
	require.NoError(t, err)
	require.Equal(t, client.OperationResultCreated, res)
}

func TestCreateOrUpdateRefusesKeyChangesAndPassesErrorsOn(t *testing.T) {
	env := testkit.NewFake(t, configMap("default", "a", nil))
	ctx := env.Context()
	cms := mustFor[*corev1.ConfigMap](t, env.Env)

	rename := func(cm *corev1.ConfigMap) error { cm.Name = "b"; return nil }
	_, err := client.CreateOrUpdate(ctx, cms, configMap("default", "a", nil), rename)
	require.ErrorIs(t, err, client.ErrKeyChanged)
	require.ErrorContains(t, err, `"default/a"`)
	_, err = client.CreateOrUpdate(ctx, cms, configMap("default", "new", nil), func(cm *corev1.ConfigMap) error { cm.Namespace = "x"; return nil })
	require.ErrorIs(t, err, client.ErrKeyChanged, "on create too")
	_, err = client.CreateOrPatch(ctx, cms, configMap("default", "a", nil), rename)
	require.ErrorIs(t, err, client.ErrKeyChanged)

	boom := errors.New("boom")
	_, err = client.CreateOrUpdate(ctx, cms, configMap("default", "a", nil), func(*corev1.ConfigMap) error { return boom })
	require.ErrorIs(t, err, boom)

	_, err = client.CreateOrUpdate(ctx, cms, nil, nil)
	require.ErrorIs(t, err, client.ErrInvalidInput)
	_, err = client.CreateOrUpdate[*corev1.ConfigMap](ctx, nil, configMap("default", "a", nil), nil)
	require.ErrorIs(t, err, client.ErrInvalidInput)

	env.FailWrites(100, "update")
	_, err = client.CreateOrUpdate(ctx, cms, configMap("default", "a", nil), setData("k", "v"))
	require.ErrorIs(t, err, testkit.ErrInjected)
}

func TestCreateOrPatchSendsOnlyWhatChanged(t *testing.T) {
	env := testkit.NewFake(t, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
	})
	ctx := env.Context()
	pods := mustFor[*corev1.Pod](t, env.Env)

	env.ClearActions()
	res, err := client.CreateOrPatch(ctx, pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p"}}, func(p *corev1.Pod) error {
		p.Labels["tier"] = "front"
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, client.OperationResultUpdated, res)
	require.Equal(t, []string{` {"metadata":{"labels":{"tier":"front"}}}`}, patchBodies(t, env))

	env.ClearActions()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p"}}
	res, err = client.CreateOrPatch(ctx, pods, pod, func(p *corev1.Pod) error {
		p.Status.Message = "hello"
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, client.OperationResultUpdatedStatusOnly, res)
	require.Equal(t, []string{`status {"status":{"message":"hello"}}`}, patchBodies(t, env))
	require.Equal(t, "hello", pod.Status.Message, "obj holds the patched object")

	env.ClearActions()
	res, err = client.CreateOrPatch(ctx, pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p"}}, func(p *corev1.Pod) error {
		p.Annotations = map[string]string{"a": "b"}
		p.Status.Message = "bye"
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, client.OperationResultUpdatedStatus, res)
	require.Equal(t, []string{` {"metadata":{"annotations":{"a":"b"}}}`, `status {"status":{"message":"bye"}}`}, patchBodies(t, env))
	got, err := pods.Get(ctx, "default", "p", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "bye", got.Status.Message)
	require.Equal(t, "b", got.Annotations["a"])
	require.Equal(t, "front", got.Labels["tier"])

	env.ClearActions()
	res, err = client.CreateOrPatch(ctx, pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p"}}, func(p *corev1.Pod) error {
		p.Status.Message = "bye"
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, client.OperationResultNone, res)
	require.Empty(t, patchBodies(t, env))

	res, err = client.CreateOrPatch(ctx, pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "q"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, nil)
	require.NoError(t, err)
	require.Equal(t, client.OperationResultCreated, res)
}

// staleLister serves one fixed version of an object: a cache that has not caught up.
type staleLister struct{ obj *corev1.ConfigMap }

func (l staleLister) Get(namespace, name string) (*corev1.ConfigMap, error) {
	if l.obj.Namespace != namespace || l.obj.Name != name {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
	}
	return l.obj, nil
}

func (l staleLister) List(labels.Selector) ([]*corev1.ConfigMap, error) {
	return []*corev1.ConfigMap{l.obj}, nil
}

func TestCreateOrPatchWithOptimisticLockConflictsOnAStaleRead(t *testing.T) {
	env := testkit.NewFake(t)
	ctx := env.Context()
	cms := mustFor[*corev1.ConfigMap](t, env.Env)
	stale, err := cms.Create(ctx, configMap("default", "a", map[string]string{"n": "1"}), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cms.Patch(ctx, "default", "a", types.MergePatchType, []byte(`{"data":{"other":"x"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	cached, err := client.NewCached(cms, staleLister{stale})
	require.NoError(t, err)

	env.ClearActions()
	_, err = client.CreateOrPatch(ctx, cached, configMap("default", "a", nil), setData("n", "2"), client.WithOptimisticLock())
	require.True(t, apierrors.IsConflict(err), "got %v", err)
	require.Equal(t, []string{` {"data":{"n":"2"},"metadata":{"resourceVersion":"` + stale.ResourceVersion + `"}}`}, patchBodies(t, env))

	// Without the lock the patch merges over the newer object.
	res, err := client.CreateOrPatch(ctx, cached, configMap("default", "a", nil), setData("n", "2"))
	require.NoError(t, err)
	require.Equal(t, client.OperationResultUpdated, res)
	got, err := cms.Get(ctx, "default", "a", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"n": "2", "other": "x"}, got.Data)
}

func TestMergeFromAndPatchObject(t *testing.T) {
	env := testkit.NewFake(t, configMap("default", "a", map[string]string{"k": "1", "keep": "x"}))
	ctx := env.Context()
	cms := mustFor[*corev1.ConfigMap](t, env.Env)
	cm, err := cms.Get(ctx, "default", "a", metav1.GetOptions{})
	require.NoError(t, err)

	orig := cm.DeepCopy()
	cm.Data["k"] = "2"
	patch := client.MergeFrom(orig)
	require.Equal(t, types.MergePatchType, patch.Type())
	data, err := patch.Data(cm)
	require.NoError(t, err)
	require.JSONEq(t, `{"data":{"k":"2"}}`, string(data))
	got, err := client.PatchObject(ctx, cms, cm, patch, metav1.PatchOptions{})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"k": "2", "keep": "x"}, got.Data)

	// The optimistic lock carries the original's resourceVersion, now stale.
	cm.Data["k"] = "3"
	locked := client.MergeFromWithOptimisticLock(orig)
	data, err = locked.Data(cm)
	require.NoError(t, err)
	require.JSONEq(t, `{"data":{"k":"3"},"metadata":{"resourceVersion":"`+orig.ResourceVersion+`"}}`, string(data))
	_, err = client.PatchObject(ctx, cms, cm, locked, metav1.PatchOptions{})
	require.True(t, apierrors.IsConflict(err), "got %v", err)

	_, err = client.MergeFromWithOptimisticLock(configMap("default", "a", nil)).Data(cm)
	require.ErrorIs(t, err, client.ErrInvalidInput)
	_, err = client.MergeFrom[*corev1.ConfigMap](nil).Data(cm)
	require.ErrorIs(t, err, client.ErrInvalidInput)
	_, err = client.PatchObject(ctx, cms, cm, nil, metav1.PatchOptions{})
	require.ErrorIs(t, err, client.ErrInvalidInput)
}
