package testkit_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// Gadget is a custom resource's Go type, named after its kind as users name them.
type Gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (g *Gadget) DeepCopyObject() runtime.Object {
	c := *g
	g.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

var gadgetsGVR = schema.GroupVersionResource{Group: "owns.ctrlkit.dev", Version: "v1", Resource: "gadgets"}

const gadgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.owns.ctrlkit.dev
spec:
  group: owns.ctrlkit.dev
  names: {kind: Gadget, listKind: GadgetList, plural: gadgets, singular: gadget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// gadgetEnvs are the two back ends the Owns tests run on, each serving the namespaced Gadget.
func gadgetEnvs() map[string]func(t *testing.T) *testkit.Env {
	return map[string]func(t *testing.T) *testkit.Env{
		"fake": func(t *testing.T) *testkit.Env {
			return testkit.NewFakeWithOptions(t, testkit.FakeOptions{Resources: []fakecluster.Resource{
				{GVR: gadgetsGVR, Kind: "Gadget", Namespaced: true}}}).Env
		},
		"apiserver": func(t *testing.T) *testkit.Env {
			env := testkit.SharedAPIServer(t)
			require.NoError(t, customresource.EnsureCRDFromYAML(env.Context(), env.Dynamic(), []byte(gadgetCRD)))
			return env
		},
	}
}

// Owns with a custom-resource owner, which the controller watches too (the usual shape): a
// ConfigMap controlled by a Gadget enqueues the Gadget, one controlled by something else
// enqueues nothing, on the fake cluster and on kube-apiserver alike. Before, Owns refused the
// owner informer ("has no kind").
func TestOwnsWithACustomResourceOwner(t *testing.T) {
	for name, newEnv := range gadgetEnvs() {
		t.Run(name, func(t *testing.T) {
			env := newEnv(t)
			ctx, ns := env.Context(), env.Namespace()
			gadgets, err := informer.ForResource[*Gadget](env.Factory(), gadgetsGVR)
			require.NoError(t, err)
			cms, err := informer.For[*corev1.ConfigMap](env.Factory())
			require.NoError(t, err)

			var mu sync.Mutex
			reconciled := map[controller.Key]int{}
			ctrl, err := controller.New("gadgets", controller.ReconcilerFunc[controller.Key](func(_ context.Context, k controller.Key) (controller.Result, error) {
				mu.Lock()
				defer mu.Unlock()
				reconciled[k]++
				return controller.Result{}, nil
			}), controller.Options[controller.Key]{})
			require.NoError(t, err)
			require.NoError(t, controller.Watch(ctrl, gadgets, controller.EnqueueObject[*Gadget]))
			require.NoError(t, controller.Owns(ctrl, cms, gadgets))
			env.Sync()
			env.RunController(ctx, ctrl)

			g, err := env.Dynamic().Resource(gadgetsGVR).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "owns.ctrlkit.dev/v1", "kind": "Gadget", "metadata": map[string]any{"name": "g1"},
			}}, metav1.CreateOptions{})
			require.NoError(t, err)
			owned := func(name, kind, owner string) *corev1.ConfigMap {
				return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "owns.ctrlkit.dev/v1", Kind: kind, Name: owner, UID: g.GetUID(), Controller: ptr.To(true),
				}}}}
			}
			_, err = env.Client().CoreV1().ConfigMaps(ns).Create(ctx, owned("not-a-gadgets", "Gizmo", "gizmo"), metav1.CreateOptions{})
			require.NoError(t, err)
			_, err = env.Client().CoreV1().ConfigMaps(ns).Create(ctx, owned("gadgets-own", "Gadget", "g1"), metav1.CreateOptions{})
			require.NoError(t, err)

			key := controller.Key{Namespace: ns, Name: "g1"}
			require.Eventually(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return reconciled[key] > 0
			}, 30*time.Second, 10*time.Millisecond, "the owned ConfigMap's event enqueues its Gadget")
			env.WaitForQuiet(30 * time.Second)
			mu.Lock()
			defer mu.Unlock()
			// The Gadget's own add and its ConfigMap's event may be one reconcile or two; the
			// shared server's other namespaces may hold Gadgets of other tests.
			var here []controller.Key
			for k := range reconciled {
				if k.Namespace == ns {
					here = append(here, k)
				}
			}
			assert.Equal(t, []controller.Key{key}, here, "the Gizmo-owned ConfigMap enqueues nothing")
		})
	}
}

// A namespaced custom owner of cluster-scoped children cannot work (an owner reference carries no
// namespace; the garbage collector ignores it), and only the API server knows a custom resource's
// scope, which Owns does not ask. Run judges the wiring from the caches once they synced and fails
// naming it; a child that shows it later is logged as an error, once. Before, both were silent: no
// event of such a child reached its owner.
func TestOwnsRefusesClusterScopedChildrenOfANamespacedCustomOwner(t *testing.T) {
	// The owners' informer in each of its kinds: typed, unstructured, metadata-only.
	owners := map[string]func(f *informer.Factory, ctrl *controller.Controller[controller.Key], nss informer.Informer[*corev1.Namespace]) error{
		"typed": func(f *informer.Factory, ctrl *controller.Controller[controller.Key], nss informer.Informer[*corev1.Namespace]) error {
			gadgets, err := informer.ForResource[*Gadget](f, gadgetsGVR)
			if err != nil {
				return err
			}
			return controller.Owns(ctrl, nss, gadgets)
		},
		"unstructured": func(f *informer.Factory, ctrl *controller.Controller[controller.Key], nss informer.Informer[*corev1.Namespace]) error {
			gadgets, err := informer.ForResource[*unstructured.Unstructured](f, gadgetsGVR)
			if err != nil {
				return err
			}
			return controller.Owns(ctrl, nss, gadgets)
		},
		"metadata": func(f *informer.Factory, ctrl *controller.Controller[controller.Key], nss informer.Informer[*corev1.Namespace]) error {
			gadgets, err := informer.ForMetadata(f, gadgetsGVR)
			if err != nil {
				return err
			}
			return controller.Owns(ctrl, nss, gadgets)
		},
	}
	for envName, newEnv := range gadgetEnvs() {
		for kind, owns := range owners {
			t.Run(envName+"/"+kind, func(t *testing.T) {
				env := newEnv(t)
				ctx, ns := env.Context(), env.Namespace()
				g, err := env.Dynamic().Resource(gadgetsGVR).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "owns.ctrlkit.dev/v1", "kind": "Gadget", "metadata": map[string]any{"name": "g1"},
				}}, metav1.CreateOptions{})
				require.NoError(t, err)
				child := func(name string) *corev1.Namespace {
					return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{{
						APIVersion: "owns.ctrlkit.dev/v1", Kind: "Gadget", Name: "g1", UID: g.GetUID(), Controller: ptr.To(true),
					}}}}
				}
				newController := func(logger klog.Logger) *controller.Controller[controller.Key] {
					nss, err := informer.For[*corev1.Namespace](env.Factory())
					require.NoError(t, err)
					ctrl, err := controller.New("gadgets", controller.ReconcilerFunc[controller.Key](func(context.Context, controller.Key) (controller.Result, error) {
						return controller.Result{}, nil
					}), controller.Options[controller.Key]{Logger: logger})
					require.NoError(t, err)
					require.NoError(t, owns(env.Factory(), ctrl, nss), "the scopes of a custom resource are not known at Owns")
					return ctrl
				}

				// Later: the first such child is logged, once.
				var logs logSink
				late := newController(logr.New(&logs))
				env.Sync()
				env.RunController(ctx, late)
				require.Eventually(t, late.HasSynced, 30*time.Second, 10*time.Millisecond)
				first := ns + "-late-1"
				for _, n := range []string{first, ns + "-late-2"} {
					_, err = env.Client().CoreV1().Namespaces().Create(ctx, child(n), metav1.CreateOptions{})
					require.NoError(t, err)
					t.Cleanup(func() {
						// On a real server no namespace controller finishes the deletion: the
						// Namespace outlives the test, and a later Run (the next owner kind, or
						// -count) would find a child of a namespaced owner and refuse the wiring,
						// rightly. Without its owner reference it is nobody's child.
						bg := context.Background()
						if obj, err := env.Client().CoreV1().Namespaces().Get(bg, n, metav1.GetOptions{}); err == nil {
							obj.OwnerReferences = nil
							_, _ = env.Client().CoreV1().Namespaces().Update(bg, obj, metav1.UpdateOptions{})
						}
						_ = env.Client().CoreV1().Namespaces().Delete(bg, n, metav1.DeleteOptions{})
					})
				}
				require.Eventually(t, func() bool { return len(logs.errors()) > 0 }, 30*time.Second, 10*time.Millisecond,
					"a cluster-scoped child of a namespaced custom owner is logged")
				env.WaitForQuiet(30 * time.Second)
				errs := logs.errors()
				require.Len(t, errs, 1, "logged once")
				assert.Contains(t, errs[0], `names Gadget "g1" as its controller, and gadgets.owns.ctrlkit.dev are namespaced: a cluster-scoped object cannot be owned by a namespaced one`)

				// At start: Run fails, naming the wiring and a child that shows it.
				runCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				err = newController(klog.Background()).Run(runCtx)
				require.ErrorIs(t, err, controller.ErrInvalidOptions)
				assert.ErrorContains(t, err, `invalid Owns: namespaces: cluster-scoped "`+ns+`-late-`)
			})
		}
	}
}

// logSink keeps the messages and errors of Error calls.
type logSink struct {
	mu   sync.Mutex
	errs []string
}

func (s *logSink) Init(logr.RuntimeInfo)          {}
func (s *logSink) Enabled(int) bool               { return false }
func (s *logSink) Info(int, string, ...any)       {}
func (s *logSink) WithValues(...any) logr.LogSink { return s }
func (s *logSink) WithName(string) logr.LogSink   { return s }
func (s *logSink) Error(err error, msg string, kv ...any) {
	s.mu.Lock()
	s.errs = append(s.errs, msg+": "+err.Error())
	s.mu.Unlock()
}

func (s *logSink) errors() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.errs)
}
