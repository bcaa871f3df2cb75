package testkit_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit/sim"
)

// simShapeCells are the cells of the shape matrix that run under the simulator's faults: the
// namespaced owner of namespaced children, the Tenant's shape (a cluster-scoped owner applying
// namespaced children), an unstructured owner, and one cell of each other wiring.
var simShapeCells = []shapeCell{
	{wiring: "Owns", owner: "typed", ownerScope: "namespaced", childScope: "namespaced", write: "update"},
	{wiring: "Owns", owner: "typed", ownerScope: "cluster", childScope: "namespaced", write: "apply"},
	{wiring: "Owns", owner: "unstructured", ownerScope: "namespaced", childScope: "namespaced", write: "patch"},
	{wiring: "EnqueueControllerOf", owner: "metadata", ownerScope: "cluster", childScope: "cluster", write: "patch"},
	{wiring: "mapping", owner: "builtin", ownerScope: "namespaced", childScope: "namespaced", write: "update"},
}

// A sample of the shape matrix under the simulator's faults: the end state and writes of each
// cell must be those of its run without faults, and the owner's finalizer must have deleted its
// child.
func TestSimShapeMatrix(t *testing.T) {
	for _, cell := range simShapeCells {
		t.Run(cell.String(), func(t *testing.T) {
			// sim.StaleRestart finds, in every cell, a child created again from a lagging cache's
			// copy of its owner (already deleted, or about to be) and deleted once more when the
			// cache catches up, or left to a garbage collector the fake cluster does not have; a
			// staleness guard in the library (a role gate holding the workers until the caches
			// reach a consistent read's resourceVersion) would prevent the first.
			sim.Check(t, shapeSimScenario(cell), sim.Crash(), sim.MergeEvents(30*time.Second),
				sim.Relist(30*time.Second), sim.APIErrors(20), sim.Drift())
		})
	}
}

// shapeSimController builds the cell's controller on a process's factory and dynamic client,
// as runShapeCell does on an Env's.
func shapeSimController(f *informer.Factory, dyn dynamic.Interface, cell shapeCell) (*controller.Controller[controller.Key], error) {
	gvr := cell.ownerKind().gvr
	switch {
	case cell.owner == "builtin" && cell.ownerScope == "namespaced":
		return withSimShapeChildren(f, dyn, cell, must(informer.For[*corev1.ServiceAccount](f)))
	case cell.owner == "builtin":
		return withSimShapeChildren(f, dyn, cell, must(informer.For[*schedulingv1.PriorityClass](f)))
	case cell.owner == "typed" && cell.ownerScope == "namespaced":
		return withSimShapeChildren(f, dyn, cell, must(informer.ForResource[*ShapeOwner](f, gvr)))
	case cell.owner == "typed":
		return withSimShapeChildren(f, dyn, cell, must(informer.ForResource[*ClusterShapeOwner](f, gvr)))
	case cell.owner == "unstructured":
		return withSimShapeChildren(f, dyn, cell, must(informer.ForResource[*unstructured.Unstructured](f, gvr)))
	case cell.owner == "metadata":
		return withSimShapeChildren(f, dyn, cell, must(informer.ForMetadata(f, gvr)))
	}
	return nil, fmt.Errorf("unknown owner %q", cell.owner)
}

func withSimShapeChildren[O informer.Object](f *informer.Factory, dyn dynamic.Interface, cell shapeCell, owners informer.Informer[O]) (*controller.Controller[controller.Key], error) {
	var c *controller.Controller[controller.Key]
	var err error
	if cell.childScope == "namespaced" {
		c, _, err = newShapeController(cell, dyn, owners, must(informer.For[*corev1.ConfigMap](f)))
	} else {
		c, _, err = newShapeController(cell, dyn, owners, must(informer.For[*rbacv1.ClusterRole](f)))
	}
	return c, err
}

// shapeSimScenario is the cell's controller and the owner's life: created, its child changed by
// another field manager, the owner changed, the owner deleted (a child deleted by someone else
// is sim.Drift's).
func shapeSimScenario(cell shapeCell) sim.Scenario {
	const ns, ownerName = "default", "owner"
	ok, ck := cell.ownerKind(), cell.childKind()
	ownerNS := ""
	if ok.namespaced {
		ownerNS = ns
	}
	childNS := ""
	if ck.namespaced {
		childNS = ns // the owner's namespace, or the one a cluster-scoped owner names
	}
	childName := ownerName + "-child"
	owners := func(u *sim.User) dynamic.ResourceInterface { return u.Dynamic.Resource(ok.gvr).Namespace(ownerNS) }
	children := func(u *sim.User) dynamic.ResourceInterface { return u.Dynamic.Resource(ck.gvr).Namespace(childNS) }
	return sim.Scenario{
		CRDs:    shapeCRDsBytes(),
		Objects: []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}},
		Start: func(p *sim.Process) error {
			c, err := shapeSimController(p.Factory, p.Dynamic, cell)
			if err != nil {
				return err
			}
			p.Run(c)
			return nil
		},
		Workload: []sim.Step{
			{Name: "create the owner", Do: func(ctx context.Context, u *sim.User) error {
				owner := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": ok.apiVersion(), "kind": ok.kind,
					"metadata": map[string]any{"name": ownerName, "annotations": map[string]any{shapeValue: "v1", shapeTarget: ns}},
				}}
				maps.Copy(owner.Object, ok.extra)
				if ownerNS != "" {
					owner.SetNamespace(ownerNS)
				}
				_, err := owners(u).Create(ctx, owner, metav1.CreateOptions{})
				return err
			}},
			{Name: "another field manager changes the child", Do: func(ctx context.Context, u *sim.User) error {
				// Steps do not wait for a lagging cache: the child may not be there yet.
				var err error
				for range 600 {
					_, err = children(u).Patch(ctx, childName, types.MergePatchType,
						fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, shapeValue, shapeDriftValue), metav1.PatchOptions{FieldManager: shapeIntruder})
					if !apierrors.IsNotFound(err) {
						return err
					}
					time.Sleep(time.Second) // virtual
				}
				return err
			}},
			{Name: "change the owner's value", Do: func(ctx context.Context, u *sim.User) error {
				_, err := owners(u).Patch(ctx, ownerName, types.MergePatchType,
					fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"v2"}}}`, shapeValue), metav1.PatchOptions{})
				return err
			}},
			{Name: "delete the owner", Do: func(ctx context.Context, u *sim.User) error {
				return owners(u).Delete(ctx, ownerName, metav1.DeleteOptions{})
			}},
		},
		Invariants: []sim.Invariant{{Name: "the owner's finalizer deleted its child before the owner went", Check: func(ctx context.Context, u *sim.User) error {
			if _, err := owners(u).Get(ctx, ownerName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("the owner is still there: %v", err)
			}
			if _, err := children(u).Get(ctx, childName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("the child is still there: %v", err)
			}
			return nil
		}}},
	}
}
