package finalizer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/util/retry"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/finalizer"
	"github.com/ctrlkit/ctrlkit/testkit"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// The clients users already have are Patchers without an adapter.
var (
	_ finalizer.Patcher[*corev1.ConfigMap]          = typedcorev1.ConfigMapInterface(nil)
	_ finalizer.Patcher[*corev1.Namespace]          = typedcorev1.NamespaceInterface(nil) // cluster-scoped
	_ finalizer.Patcher[*unstructured.Unstructured] = dynamic.ResourceInterface(nil)
)

const (
	cleanup = "example.com/cleanup"
	other   = "other.example.com/keep"
)

func configMap(name string, finalizers ...string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: name, Finalizers: finalizers}}
}

// patches counts the patch requests the fake received.
func patches(env *testkit.FakeEnv) int {
	n := 0
	for _, a := range env.Actions() {
		if a.GetVerb() == "patch" {
			n++
		}
	}
	return n
}

func TestHas(t *testing.T) {
	cm := configMap("a", other, cleanup)
	assert.True(t, finalizer.Has(cm, cleanup))
	assert.True(t, finalizer.Has(cm, other))
	assert.False(t, finalizer.Has(cm, "example.com/other"))
	assert.False(t, finalizer.Has(configMap("b"), cleanup))
	assert.False(t, finalizer.Has((*corev1.ConfigMap)(nil), cleanup), "a nil object has no finalizers and does not panic")
	assert.False(t, finalizer.Has(nil, cleanup))
}

func TestAddRemove(t *testing.T) {
	env := testkit.NewFake(t, configMap("a", other))
	ctx := env.Context()
	cms := env.Client().CoreV1().ConfigMaps(metav1.NamespaceDefault)
	cm, err := cms.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	env.ClearActions()

	added, err := finalizer.Add(ctx, cms, cm, cleanup)
	require.NoError(t, err)
	assert.Equal(t, []string{other, cleanup}, added.Finalizers, "appended after the finalizers already there")
	assert.Equal(t, []string{other}, cm.Finalizers, "the object passed in is not modified")
	assert.NotEqual(t, cm.ResourceVersion, added.ResourceVersion, "the server's answer is returned")
	stored, err := cms.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{other, cleanup}, stored.Finalizers)
	assert.Equal(t, 1, patches(env))

	again, err := finalizer.Add(ctx, cms, added, cleanup)
	require.NoError(t, err)
	assert.Same(t, added, again, "already present: the object itself comes back")
	assert.Equal(t, 1, patches(env), "already present: no request")

	removed, err := finalizer.Remove(ctx, cms, added, cleanup)
	require.NoError(t, err)
	assert.Equal(t, []string{other}, removed.Finalizers)
	assert.Equal(t, 2, patches(env))

	again, err = finalizer.Remove(ctx, cms, removed, cleanup)
	require.NoError(t, err)
	assert.Same(t, removed, again)
	assert.Equal(t, 2, patches(env), "already absent: no request")

	// Removing the last finalizer removes the field.
	last, err := finalizer.Remove(ctx, cms, removed, other)
	require.NoError(t, err)
	assert.Empty(t, last.Finalizers)
	stored, err = cms.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, stored.Finalizers)

	// Several names at once: one patch, duplicates ignored, order kept.
	env.ClearActions()
	both, err := finalizer.Add(ctx, cms, last, "example.com/b", "example.com/a", "example.com/b")
	require.NoError(t, err)
	assert.Equal(t, []string{"example.com/b", "example.com/a"}, both.Finalizers)
	none, err := finalizer.Remove(ctx, cms, both, "example.com/a", "example.com/b")
	require.NoError(t, err)
	assert.Empty(t, none.Finalizers)
	assert.Equal(t, 2, patches(env))
}

// The patch is preconditioned on the resourceVersion of the object passed in: when the object
// changed since, the server answers Conflict and nothing is written.
func TestConflictOnStaleObject(t *testing.T) {
	env := testkit.NewFake(t, configMap("a", cleanup))
	ctx := env.Context()
	cms := env.Client().CoreV1().ConfigMaps(metav1.NamespaceDefault)
	stale, err := cms.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)

	fresh := stale.DeepCopy()
	fresh.Labels = map[string]string{"changed": "yes"}
	_, err = cms.Update(ctx, fresh, metav1.UpdateOptions{})
	require.NoError(t, err)

	_, err = finalizer.Add(ctx, cms, stale, "example.com/second")
	require.Error(t, err)
	assert.True(t, apierrors.IsConflict(err), "got %v", err)
	assert.Contains(t, err.Error(), "default/a", "the error names the object")
	_, err = finalizer.Remove(ctx, cms, stale, cleanup)
	assert.True(t, apierrors.IsConflict(err), "got %v", err)

	stored, err := cms.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{cleanup}, stored.Finalizers, "nothing was written")
}

// Two writers read the same object and add different finalizers: the second gets a Conflict
// instead of overwriting the first's finalizer, and after re-reading both are there. Then many
// writers race, each retrying on Conflict from a fresh read: no finalizer is lost.
func TestConcurrentWritersLoseNothing(t *testing.T) {
	env := testkit.NewFake(t, configMap("a"), configMap("b"))
	ctx := env.Context()
	cms := env.Client().CoreV1().ConfigMaps(metav1.NamespaceDefault)

	seenByA, err := cms.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	seenByB := seenByA.DeepCopy()
	_, err = finalizer.Add(ctx, cms, seenByA, "a.example.com/x")
	require.NoError(t, err)
	_, err = finalizer.Add(ctx, cms, seenByB, "b.example.com/y")
	require.True(t, apierrors.IsConflict(err), "the second writer's stale list would drop the first's finalizer; got %v", err)
	fresh, err := cms.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	_, err = finalizer.Add(ctx, cms, fresh, "b.example.com/y")
	require.NoError(t, err)
	stored, err := cms.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"a.example.com/x", "b.example.com/y"}, stored.Finalizers)

	const writers = 8
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() {
			name := fmt.Sprintf("w%d.example.com/f", i)
			errs[i] = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				cm, err := cms.Get(ctx, "b", metav1.GetOptions{})
				if err != nil {
					return err
				}
				_, err = finalizer.Add(ctx, cms, cm, name)
				return err
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "writer %d", i)
	}
	stored, err = cms.Get(ctx, "b", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Len(t, stored.Finalizers, writers, "every writer's finalizer is there: %v", stored.Finalizers)
}

func TestValidateName(t *testing.T) {
	for _, ok := range []string{cleanup, "a.b.c/d-e_f.g", "orphan", "foregroundDeletion", "kubernetes"} {
		assert.NoError(t, finalizer.ValidateName(ok), ok)
	}
	for _, bad := range []string{"", "cleanup", "example.com", "Example.com/x", "example.com/", "/x", "example.com/-x", "a/b/c",
		"example.com/" + strings.Repeat("x", 64)} {
		err := finalizer.ValidateName(bad)
		require.ErrorIs(t, err, finalizer.ErrInvalidName, "%q", bad)
		assert.Contains(t, err.Error(), fmt.Sprintf("%q", bad), "the error quotes the name")
	}
}

// Bad input is refused with an error naming the culprit, before any request and without a panic.
func TestAddRemoveRefuseBadInput(t *testing.T) {
	env := testkit.NewFake(t, configMap("a"))
	ctx := env.Context()
	cms := env.Client().CoreV1().ConfigMaps(metav1.NamespaceDefault)
	cm, err := cms.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	env.ClearActions()

	_, err = finalizer.Add(ctx, cms, cm, "cleanup")
	require.ErrorIs(t, err, finalizer.ErrInvalidName)
	assert.Contains(t, err.Error(), "default/a")
	assert.Contains(t, err.Error(), `"cleanup"`)

	_, err = finalizer.Add(ctx, cms, (*corev1.ConfigMap)(nil), cleanup)
	require.ErrorIs(t, err, finalizer.ErrInvalidInput)
	require.ErrorContains(t, err, "nil object")
	_, err = finalizer.Remove(ctx, cms, (*corev1.ConfigMap)(nil), cleanup)
	require.ErrorIs(t, err, finalizer.ErrInvalidInput)
	require.ErrorContains(t, err, "nil object")
	_, err = finalizer.Add(ctx, nil, cm, cleanup)
	require.ErrorIs(t, err, finalizer.ErrInvalidInput)
	require.ErrorContains(t, err, "nil patcher")
	var nilFunc finalizer.PatcherFunc[*corev1.ConfigMap]
	_, err = finalizer.Remove(ctx, nilFunc, configMap("x", cleanup), cleanup)
	require.ErrorIs(t, err, finalizer.ErrInvalidInput)
	require.ErrorContains(t, err, "nil patcher")

	unread := configMap("a") // built, not read: no resourceVersion to precondition on
	_, err = finalizer.Add(ctx, cms, unread, cleanup)
	require.ErrorIs(t, err, finalizer.ErrMissingResourceVersion)
	assert.Contains(t, err.Error(), "default/a")

	deleting := cm.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{}
	_, err = finalizer.Add(ctx, cms, deleting, cleanup)
	require.ErrorIs(t, err, finalizer.ErrBeingDeleted)
	assert.Contains(t, err.Error(), "default/a")

	assert.Zero(t, patches(env), "nothing was sent")

	// A patcher that answers with neither an object nor an error is reported, not dereferenced.
	empty := finalizer.PatcherFunc[*corev1.ConfigMap](func(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*corev1.ConfigMap, error) {
		return nil, nil
	})
	_, err = finalizer.Add(ctx, empty, cm, cleanup)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no object")
}

// The patch sent is a JSON merge patch of the finalizers with the resourceVersion, for
// custom resources (through the dynamic client) as for built-in types.
func TestPatchCustomResource(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	env := testkit.NewFakeWithOptions(t, testkit.FakeOptions{
		Resources: []fakecluster.Resource{{GVR: gvr, Kind: "Widget", Namespaced: true}},
	})
	ctx := env.Context()
	widgets := env.Dynamic().Resource(gvr).Namespace(metav1.NamespaceDefault)
	w, err := widgets.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}, "spec": map[string]any{"size": int64(3)},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)

	var sent []byte
	recording := finalizer.PatcherFunc[*unstructured.Unstructured](func(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*unstructured.Unstructured, error) {
		assert.Equal(t, types.MergePatchType, pt)
		sent = data
		return widgets.Patch(ctx, name, pt, data, opts, sub...)
	})
	added, err := finalizer.Add(ctx, recording, w, cleanup)
	require.NoError(t, err)
	assert.JSONEq(t, fmt.Sprintf(`{"metadata":{"finalizers":[%q],"resourceVersion":%q}}`, cleanup, w.GetResourceVersion()), string(sent))
	assert.Equal(t, []string{cleanup}, added.GetFinalizers())

	removed, err := finalizer.Remove(ctx, recording, added, cleanup)
	require.NoError(t, err)
	assert.JSONEq(t, fmt.Sprintf(`{"metadata":{"finalizers":null,"resourceVersion":%q}}`, added.GetResourceVersion()), string(sent))
	assert.Empty(t, removed.GetFinalizers())

	// customresource.Client takes the namespace as an argument: InNamespace adapts it.
	client, err := customresource.NewClient[*widget](env.Dynamic(), gvr, customresource.WithKind("Widget"))
	require.NoError(t, err)
	typed, err := client.Get(ctx, metav1.NamespaceDefault, "w", metav1.GetOptions{})
	require.NoError(t, err)
	typedAdded, err := finalizer.Add(ctx, finalizer.InNamespace(client, metav1.NamespaceDefault), typed, cleanup)
	require.NoError(t, err)
	assert.Equal(t, []string{cleanup}, typedAdded.Finalizers)
	assert.Equal(t, 3, typedAdded.Spec.Size, "the rest of the object is untouched")
}

// widget is a custom resource Go type, as a code generator would write it.
type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Size int `json:"size"`
	} `json:"spec"`
}

func (w *widget) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

func TestErrorsUnwrap(t *testing.T) {
	cause := errors.New("bucket busy")
	err := fmt.Errorf("wrapped: %w", &finalizer.FinalizeError{Finalizer: cleanup, Object: "default/a", Err: cause})
	var fe *finalizer.FinalizeError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, cleanup, fe.Finalizer)
	assert.ErrorIs(t, err, cause)
	assert.Equal(t, `wrapped: finalizer "example.com/cleanup" of default/a failed: bucket busy`, err.Error())
}
