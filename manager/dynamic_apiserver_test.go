package manager_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// thing has an unexported name, so its kind is known only from the scheme.
type thing struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (t *thing) DeepCopyObject() runtime.Object {
	c := *t
	t.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// A Manager built from a config has a dynamic client beside its clientset: its factory serves
// custom resources (informer.ForResource) with no option, Dynamic hands the same client to
// customresource clients, and Options.Scheme names the kinds of custom Go types.
func TestManagerFromConfigServesCustomResources(t *testing.T) {
	env := testkit.NewAPIServer(t)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"} // any served resource will do
	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(gvr.GroupVersion().WithKind("ConfigMap"), &thing{})
	mgr, err := manager.New(manager.Options{Config: env.Config(), Scheme: scheme})
	require.NoError(t, err)
	require.NotNil(t, mgr.Dynamic())

	things, err := informer.ForResource[*thing](mgr.Factory(), gvr, informer.InNamespaces[*thing](env.Namespace()))
	require.NoError(t, err, "the factory has the dynamic client")
	assert.Equal(t, "ConfigMap", things.GVK().Kind, "the kind comes from Options.Scheme")

	_, err = mgr.Dynamic().Resource(gvr).Namespace(env.Namespace()).Create(env.Context(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "seen"},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(env.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
	require.Eventually(t, func() bool {
		_, err := things.Lister().Get(env.Namespace(), "seen")
		return err == nil
	}, 30*time.Second, 10*time.Millisecond, "the Manager's factory lists and watches through the dynamic client")
}

// A Manager given a Client has the Dynamic it is given, or none.
func TestManagerDynamicFromOptions(t *testing.T) {
	env := testkit.NewFake(t)
	without, err := manager.New(manager.Options{Client: env.Client()})
	require.NoError(t, err)
	assert.Nil(t, without.Dynamic())
	_, err = informer.ForResource[*thing](without.Factory(), schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "things"})
	assert.ErrorIs(t, err, informer.ErrNoClient)

	with, err := manager.New(manager.Options{Client: env.Client(), Dynamic: env.Dynamic()})
	require.NoError(t, err)
	assert.Same(t, env.Dynamic(), with.Dynamic())
}
