package testkit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// The shape matrix: the ways a user wires an owner's children to its controller (Owns, Watch
// with EnqueueControllerOf, Watch with a mapping of their own) × the owner's scope × the
// child's scope × what the owners' informer holds (a built-in type, a custom resource's Go
// type, unstructured objects, metadata only) × how the controller writes its children (update,
// merge patch, server-side apply). In every cell the controller keeps one child per owner at
// the owner's value and, with a finalizer on the owner, deletes the child before the owner
// goes; the cell creates an owner, lets another field manager change the child, deletes the
// child, changes the owner and deletes it, and waits for convergence after each step. Every
// reconcile must be of the owner's own key: a cluster-scoped owner's children once enqueued
// "<child namespace>/<owner>", a key that does not exist, and drift was never repaired.
//
// Every cell runs on the fake cluster; a sample covering each value of each axis runs on
// kube-apiserver. A cluster-scoped child of a namespaced owner cannot be: Owns refuses it.

const (
	shapeGroup      = "shapes.ctrlkit.dev"
	shapeValue      = "shapes.ctrlkit.dev/value"     // the owner's desired value, kept on the child
	shapeTarget     = "shapes.ctrlkit.dev/namespace" // where a cluster-scoped owner's namespaced child lives
	shapeOwnerNS    = "shapes.ctrlkit.dev/owner-namespace"
	shapeOwnerName  = "shapes.ctrlkit.dev/owner-name"
	shapeFinalizer  = "shapes.ctrlkit.dev/children"
	shapeManager    = "shapes-controller"
	shapeIntruder   = "intruder"
	shapeDriftValue = "drifted"
)

// ShapeOwner and ClusterShapeOwner are custom resources' Go types, named after their kinds.
type ShapeOwner struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (o *ShapeOwner) DeepCopyObject() runtime.Object {
	c := *o
	o.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

type ClusterShapeOwner struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (o *ClusterShapeOwner) DeepCopyObject() runtime.Object {
	c := *o
	o.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

func shapeCRD(kind, plural, scope string) string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[2]s.%[4]s
spec:
  group: %[4]s
  names: {kind: %[1]s, listKind: %[1]sList, plural: %[2]s, singular: %[5]s}
  scope: %[3]s
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, kind, plural, scope, shapeGroup, plural[:len(plural)-1])
}

var shapeCRDs = []string{
	shapeCRD("ShapeOwner", "shapeowners", "Namespaced"),
	shapeCRD("ClusterShapeOwner", "clustershapeowners", "Cluster"),
}

// shapeKind is one resource of the matrix: its resource, kind and scope.
type shapeKind struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
	extra      map[string]any // fields a create needs (a PriorityClass's value)
}

func (k shapeKind) apiVersion() string { return k.gvr.GroupVersion().String() }

var (
	saKind            = shapeKind{gvr: corev1.SchemeGroupVersion.WithResource("serviceaccounts"), kind: "ServiceAccount", namespaced: true}
	priorityClassKind = shapeKind{gvr: schedulingv1.SchemeGroupVersion.WithResource("priorityclasses"), kind: "PriorityClass", extra: map[string]any{"value": int64(1000)}}
	shapeOwnerKind    = shapeKind{gvr: schema.GroupVersionResource{Group: shapeGroup, Version: "v1", Resource: "shapeowners"}, kind: "ShapeOwner", namespaced: true}
	clusterOwnerKind  = shapeKind{gvr: schema.GroupVersionResource{Group: shapeGroup, Version: "v1", Resource: "clustershapeowners"}, kind: "ClusterShapeOwner"}
	configMapKind     = shapeKind{gvr: corev1.SchemeGroupVersion.WithResource("configmaps"), kind: "ConfigMap", namespaced: true}
	clusterRoleKind   = shapeKind{gvr: rbacv1.SchemeGroupVersion.WithResource("clusterroles"), kind: "ClusterRole"}
)

// shapeCell is one cell of the matrix.
type shapeCell struct {
	wiring     string // "Owns", "EnqueueControllerOf", "mapping"
	owner      string // "builtin", "typed", "unstructured", "metadata"
	ownerScope string // "namespaced", "cluster"
	childScope string
	write      string // "update", "patch", "apply"
}

func (c shapeCell) String() string {
	return fmt.Sprintf("%s/%s-%s-owner/%s-child/%s", c.wiring, c.ownerScope, c.owner, c.childScope, c.write)
}

func (c shapeCell) ownerKind() shapeKind {
	switch {
	case c.owner == "builtin" && c.ownerScope == "namespaced":
		return saKind
	case c.owner == "builtin":
		return priorityClassKind
	case c.ownerScope == "namespaced":
		return shapeOwnerKind
	default:
		return clusterOwnerKind
	}
}

func (c shapeCell) childKind() shapeKind {
	if c.childScope == "namespaced" {
		return configMapKind
	}
	return clusterRoleKind
}

func shapeCells() []shapeCell {
	var cells []shapeCell
	for _, wiring := range []string{"Owns", "EnqueueControllerOf", "mapping"} {
		for _, scopes := range [][2]string{{"namespaced", "namespaced"}, {"cluster", "namespaced"}, {"cluster", "cluster"}} {
			for _, owner := range []string{"builtin", "typed", "unstructured", "metadata"} {
				for _, write := range []string{"update", "patch", "apply"} {
					cells = append(cells, shapeCell{wiring: wiring, owner: owner, ownerScope: scopes[0], childScope: scopes[1], write: write})
				}
			}
		}
	}
	return cells
}

// apiServerShapeCells is the sample that runs on kube-apiserver: every value of every axis at
// least once, the Tenant's shape (a cluster-scoped custom owner applying namespaced children,
// wired with Owns) first.
var apiServerShapeCells = []shapeCell{
	{wiring: "Owns", owner: "typed", ownerScope: "cluster", childScope: "namespaced", write: "apply"},
	{wiring: "EnqueueControllerOf", owner: "unstructured", ownerScope: "cluster", childScope: "cluster", write: "patch"},
	{wiring: "mapping", owner: "metadata", ownerScope: "namespaced", childScope: "namespaced", write: "update"},
	{wiring: "Owns", owner: "builtin", ownerScope: "namespaced", childScope: "namespaced", write: "patch"},
	{wiring: "Owns", owner: "metadata", ownerScope: "cluster", childScope: "namespaced", write: "update"},
	{wiring: "EnqueueControllerOf", owner: "builtin", ownerScope: "cluster", childScope: "namespaced", write: "apply"},
	{wiring: "Owns", owner: "unstructured", ownerScope: "namespaced", childScope: "namespaced", write: "apply"},
}

func TestShapeMatrixFake(t *testing.T) {
	cells := shapeCells()
	t.Logf("shape matrix: %d cells", len(cells))
	for _, cell := range cells {
		t.Run(cell.String(), func(t *testing.T) {
			t.Parallel()
			env := testkit.NewFakeWithOptions(t, testkit.FakeOptions{CRDs: shapeCRDsBytes()})
			runShapeCell(t, env.Env, cell, 10*time.Second)
		})
	}
}

func TestShapeMatrixAPIServer(t *testing.T) {
	for _, cell := range apiServerShapeCells {
		t.Run(cell.String(), func(t *testing.T) {
			env := testkit.SharedAPIServer(t)
			for _, crd := range shapeCRDs {
				require.NoError(t, customresource.EnsureCRDFromYAML(env.Context(), env.Dynamic(), []byte(crd)))
			}
			runShapeCell(t, env, cell, 30*time.Second)
		})
	}
}

// A cluster-scoped child cannot be owned by a namespaced owner: Owns says so when it is wired.
func TestShapeMatrixRefusesANamespacedOwnerOfClusterScopedChildren(t *testing.T) {
	env := testkit.NewFake(t)
	sas, err := informer.For[*corev1.ServiceAccount](env.Factory())
	require.NoError(t, err)
	roles, err := informer.For[*rbacv1.ClusterRole](env.Factory())
	require.NoError(t, err)
	c, err := controller.New("refused", controller.ReconcilerFunc[controller.Key](func(context.Context, controller.Key) (controller.Result, error) {
		return controller.Result{}, nil
	}), controller.Options[controller.Key]{})
	require.NoError(t, err)
	err = controller.Owns(c, roles, sas)
	require.ErrorIs(t, err, controller.ErrInvalidOptions)
	assert.ErrorContains(t, err, "clusterroles.rbac.authorization.k8s.io are cluster-scoped and serviceaccounts namespaced")
}

func shapeCRDsBytes() [][]byte {
	out := make([][]byte, len(shapeCRDs))
	for i, crd := range shapeCRDs {
		out[i] = []byte(crd)
	}
	return out
}

// runShapeCell builds the owners' informer the cell asks for and runs the cell on it.
func runShapeCell(t *testing.T, env *testkit.Env, cell shapeCell, timeout time.Duration) {
	f := env.Factory()
	gvr := cell.ownerKind().gvr
	switch {
	case cell.owner == "builtin" && cell.ownerScope == "namespaced":
		withShapeChildren(t, env, cell, timeout, must(informer.For[*corev1.ServiceAccount](f)))
	case cell.owner == "builtin":
		withShapeChildren(t, env, cell, timeout, must(informer.For[*schedulingv1.PriorityClass](f)))
	case cell.owner == "typed" && cell.ownerScope == "namespaced":
		withShapeChildren(t, env, cell, timeout, must(informer.ForResource[*ShapeOwner](f, gvr)))
	case cell.owner == "typed":
		withShapeChildren(t, env, cell, timeout, must(informer.ForResource[*ClusterShapeOwner](f, gvr)))
	case cell.owner == "unstructured":
		withShapeChildren(t, env, cell, timeout, must(informer.ForResource[*unstructured.Unstructured](f, gvr)))
	case cell.owner == "metadata":
		withShapeChildren(t, env, cell, timeout, must(informer.ForMetadata(f, gvr)))
	default:
		t.Fatalf("unknown owner %q", cell.owner)
	}
}

func withShapeChildren[O informer.Object](t *testing.T, env *testkit.Env, cell shapeCell, timeout time.Duration, owners informer.Informer[O]) {
	if cell.childScope == "namespaced" {
		shapeScenario(t, env, cell, timeout, owners, must(informer.For[*corev1.ConfigMap](env.Factory())))
	} else {
		shapeScenario(t, env, cell, timeout, owners, must(informer.For[*rbacv1.ClusterRole](env.Factory())))
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err) // test setup only: the informers above exist for every factory of an Env
	}
	return v
}

// shapeController is the matrix's controller: one child per owner, at the owner's value.
type shapeController[O, C informer.Object] struct {
	cell      shapeCell
	dyn       dynamic.Interface
	owners    informer.Informer[O]
	children  informer.Informer[C]
	ownerKind shapeKind
	childKind shapeKind

	mu   sync.Mutex
	keys map[controller.Key]int
}

func (s *shapeController[O, C]) seen() map[controller.Key]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.keys)
}

// childOf is where owner's child lives: in the owner's namespace, in the namespace a
// cluster-scoped owner names, or cluster-scoped.
func (s *shapeController[O, C]) childOf(owner metav1.Object) (namespace, name string) {
	name = owner.GetName() + "-child"
	if !s.childKind.namespaced {
		return "", name
	}
	if owner.GetNamespace() != "" {
		return owner.GetNamespace(), name
	}
	return owner.GetAnnotations()[shapeTarget], name
}

func (s *shapeController[O, C]) ownerResource(owner metav1.Object) dynamic.ResourceInterface {
	return s.dyn.Resource(s.ownerKind.gvr).Namespace(owner.GetNamespace())
}

func (s *shapeController[O, C]) Reconcile(ctx context.Context, key controller.Key) (controller.Result, error) {
	s.mu.Lock()
	s.keys[key]++
	s.mu.Unlock()
	owner, err := s.owners.Lister().Get(key.Namespace, key.Name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	if _, ours := owner.GetAnnotations()[shapeValue]; !ours {
		return controller.Result{}, nil // a cluster's own PriorityClass, another test's owner
	}
	ns, name := s.childOf(owner)
	children := s.dyn.Resource(s.childKind.gvr).Namespace(ns)
	finalizers := owner.GetFinalizers()
	if owner.GetDeletionTimestamp() != nil {
		if !slices.Contains(finalizers, shapeFinalizer) {
			return controller.Result{}, nil
		}
		if err := children.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return controller.Result{}, err
		}
		rest := slices.DeleteFunc(slices.Clone(finalizers), func(f string) bool { return f == shapeFinalizer })
		return controller.Result{}, s.patchOwnerFinalizers(ctx, owner, rest)
	}
	if !slices.Contains(finalizers, shapeFinalizer) {
		if err := s.patchOwnerFinalizers(ctx, owner, append(slices.Clone(finalizers), shapeFinalizer)); err != nil {
			return controller.Result{}, err
		}
	}
	want := owner.GetAnnotations()[shapeValue]
	desired := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": s.childKind.apiVersion(),
		"kind":       s.childKind.kind,
		"metadata": map[string]any{
			"name":        name,
			"labels":      map[string]any{shapeOwnerNS: owner.GetNamespace(), shapeOwnerName: owner.GetName()},
			"annotations": map[string]any{shapeValue: want},
			"ownerReferences": []any{map[string]any{
				"apiVersion": s.ownerKind.apiVersion(), "kind": s.ownerKind.kind, "name": owner.GetName(),
				"uid": string(owner.GetUID()), "controller": true, "blockOwnerDeletion": true,
			}},
		},
	}}
	if ns != "" {
		desired.SetNamespace(ns)
	}
	if s.cell.write == "apply" {
		_, err := children.Apply(ctx, name, desired, metav1.ApplyOptions{FieldManager: shapeManager, Force: true})
		return controller.Result{}, err
	}
	current, err := s.children.Lister().Get(ns, name)
	if apierrors.IsNotFound(err) {
		_, err = children.Create(ctx, desired, metav1.CreateOptions{FieldManager: shapeManager})
		if apierrors.IsAlreadyExists(err) {
			err = fmt.Errorf("child %s/%s exists and the cache does not show it yet: %w", ns, name, err)
		}
		return controller.Result{}, err
	}
	if err != nil {
		return controller.Result{}, err
	}
	if current.GetAnnotations()[shapeValue] == want {
		return controller.Result{}, nil
	}
	switch s.cell.write {
	case "update":
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(current)
		if err != nil {
			return controller.Result{}, err
		}
		obj := &unstructured.Unstructured{Object: u}
		obj.SetAPIVersion(s.childKind.apiVersion())
		obj.SetKind(s.childKind.kind)
		annotations := obj.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[shapeValue] = want
		obj.SetAnnotations(annotations)
		_, err = children.Update(ctx, obj, metav1.UpdateOptions{FieldManager: shapeManager})
		return controller.Result{}, err
	default:
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{shapeValue: want}}})
		if err != nil {
			return controller.Result{}, err
		}
		_, err = children.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: shapeManager})
		return controller.Result{}, err
	}
}

// patchOwnerFinalizers sets the owner's finalizers, preconditioned on the version read.
func (s *shapeController[O, C]) patchOwnerFinalizers(ctx context.Context, owner metav1.Object, finalizers []string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"finalizers": finalizers, "resourceVersion": owner.GetResourceVersion(),
	}})
	if err != nil {
		return err
	}
	_, err = s.ownerResource(owner).Patch(ctx, owner.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: shapeManager})
	return err
}

// newShapeController builds the matrix's controller (one worker, the default) on owners and
// children, wired as the cell says.
func newShapeController[O, C informer.Object](cell shapeCell, dyn dynamic.Interface, owners informer.Informer[O], children informer.Informer[C]) (*controller.Controller[controller.Key], *shapeController[O, C], error) {
	s := &shapeController[O, C]{cell: cell, dyn: dyn, owners: owners, children: children,
		ownerKind: cell.ownerKind(), childKind: cell.childKind(), keys: map[controller.Key]int{}}
	c, err := controller.New("shapes", controller.Reconciler[controller.Key](s), controller.Options[controller.Key]{})
	if err != nil {
		return nil, nil, err
	}
	if err := controller.Watch(c, owners, controller.EnqueueObject); err != nil {
		return nil, nil, err
	}
	switch cell.wiring {
	case "Owns":
		err = controller.Owns(c, children, owners)
	case "EnqueueControllerOf":
		err = controller.Watch(c, children, controller.EnqueueControllerOf[C](owners))
	case "mapping":
		err = controller.Watch(c, children, func(child C) []controller.Key {
			l := child.GetLabels()
			if l[shapeOwnerName] == "" {
				return nil
			}
			return []controller.Key{{Namespace: l[shapeOwnerNS], Name: l[shapeOwnerName]}}
		})
	default:
		err = fmt.Errorf("unknown wiring %q", cell.wiring)
	}
	return c, s, err
}

// shapeScenario wires the controller as the cell says and walks the owner through its life.
func shapeScenario[O, C informer.Object](t *testing.T, env *testkit.Env, cell shapeCell, timeout time.Duration, owners informer.Informer[O], children informer.Informer[C]) {
	ctx, ns := env.Context(), env.Namespace()
	c, s, err := newShapeController(cell, env.Dynamic(), owners, children)
	require.NoError(t, err)
	env.Sync()
	env.RunController(ctx, c)

	// The owner: cluster-scoped names carry the test namespace, unique on a shared server.
	ownerName := ns + "-owner"
	ownerNS := ""
	if s.ownerKind.namespaced {
		ownerNS = ns
	}
	ownerObj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": s.ownerKind.apiVersion(), "kind": s.ownerKind.kind,
		"metadata": map[string]any{"name": ownerName, "annotations": map[string]any{shapeValue: "v1", shapeTarget: ns}},
	}}
	maps.Copy(ownerObj.Object, s.ownerKind.extra)
	if ownerNS != "" {
		ownerObj.SetNamespace(ownerNS)
	}
	ownerRes := env.Dynamic().Resource(s.ownerKind.gvr).Namespace(ownerNS)
	created, err := ownerRes.Create(ctx, ownerObj, metav1.CreateOptions{})
	require.NoError(t, err)
	childNS, childName := s.childOf(created)
	childRes := env.Dynamic().Resource(s.childKind.gvr).Namespace(childNS)

	// childAt waits until the child holds value, controlled by the owner, and returns its UID.
	childAt := func(step, value string) types.UID {
		t.Helper()
		var uid types.UID
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			child, err := childRes.Get(ctx, childName, metav1.GetOptions{})
			if !assert.NoError(c, err) {
				return
			}
			assert.Equal(c, value, child.GetAnnotations()[shapeValue])
			ref := metav1.GetControllerOf(child)
			if assert.NotNil(c, ref) {
				assert.Equal(c, created.GetUID(), ref.UID)
			}
			uid = child.GetUID()
		}, timeout, 10*time.Millisecond, "%s: child %s/%s at %q", step, childNS, childName, value)
		return uid
	}
	first := childAt("create", "v1")
	// Quiet first, so the drift below is repaired by its own event, not by a reconcile still
	// queued from the creation (the user's first test passed that way, by luck).
	env.WaitForQuiet(timeout)

	// Drift: another field manager changes the child's value.
	if cell.write == "apply" {
		drift := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": s.childKind.apiVersion(), "kind": s.childKind.kind,
			"metadata": map[string]any{"name": childName, "annotations": map[string]any{shapeValue: shapeDriftValue}},
		}}
		if childNS != "" {
			drift.SetNamespace(childNS)
		}
		_, err = childRes.Apply(ctx, childName, drift, metav1.ApplyOptions{FieldManager: shapeIntruder, Force: true})
	} else {
		_, err = childRes.Patch(ctx, childName, types.MergePatchType,
			[]byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, shapeValue, shapeDriftValue)),
			metav1.PatchOptions{FieldManager: shapeIntruder})
	}
	require.NoError(t, err)
	childAt("drift", "v1")
	env.WaitForQuiet(timeout)

	// A deleted child comes back.
	require.NoError(t, childRes.Delete(ctx, childName, metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		child, err := childRes.Get(ctx, childName, metav1.GetOptions{})
		return err == nil && child.GetUID() != first
	}, timeout, 10*time.Millisecond, "delete: the child is recreated")
	childAt("recreate", "v1")

	// A changed owner reaches its child.
	_, err = ownerRes.Patch(ctx, ownerName, types.MergePatchType,
		[]byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:"v2"}}}`, shapeValue)), metav1.PatchOptions{})
	require.NoError(t, err)
	childAt("owner change", "v2")
	env.WaitForQuiet(timeout)

	// The owner's deletion waits for its finalizer: the child goes, then the owner.
	require.NoError(t, ownerRes.Delete(ctx, ownerName, metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, ownerErr := ownerRes.Get(ctx, ownerName, metav1.GetOptions{})
		_, childErr := childRes.Get(ctx, childName, metav1.GetOptions{})
		return apierrors.IsNotFound(ownerErr) && apierrors.IsNotFound(childErr)
	}, timeout, 10*time.Millisecond, "owner deletion: owner and child gone")
	env.WaitForQuiet(timeout)

	// Every reconcile of the owner's name is of its key; other keys are the server's own
	// objects of the owners' kind (its PriorityClasses).
	ownerKey := controller.Key{Namespace: ownerNS, Name: ownerName}
	var keys []controller.Key
	for k := range s.seen() {
		if k.Name == ownerName {
			keys = append(keys, k)
		}
	}
	assert.Equal(t, []controller.Key{ownerKey}, keys, "every reconcile is of the owner's key")
}
