package controller_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kworkqueue "k8s.io/client-go/util/workqueue"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/finalizer"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// operatorWait bounds every wait of the journey; generous, since the machine may be loaded.
const operatorWait = 30 * time.Second

// widgetOperator is the controller a user writes for a custom resource with AsReconciler: a
// finalizer for something outside the cluster (its cleanup can be made to fail) and a status
// written with client.PatchStatus, with Fences.Auto.
type widgetOperator struct {
	c   *controller.Controller[controller.Key]
	crs *customresource.Client[*Widget]

	mu         sync.Mutex
	calls      int
	results    []client.OperationResult
	violations []string // objects the ObjectReconciler must never get
	attempts   int      // cleanup attempts
	cleanups   int      // cleanups that succeeded
	failures   int      // how many more attempts fail
}

func startWidgetOperator(t *testing.T, env *testkit.Env) *widgetOperator {
	t.Helper()
	widgets, err := informer.ForResource[*Widget](env.Factory(), widgetGVR)
	require.NoError(t, err)
	crs, err := customresource.NewClient[*Widget](env.Dynamic(), widgetGVR)
	require.NoError(t, err)
	o := &widgetOperator{crs: crs}

	fins := finalizer.New[*Widget]()
	require.NoError(t, fins.Register(cleanupFinalizer, func(context.Context, *Widget) error {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.attempts++
		if o.failures > 0 {
			o.failures--
			return errors.New("the external system is down")
		}
		o.cleanups++
		return nil
	}))
	r, err := controller.AsReconciler(widgets.Lister(), controller.ObjectReconcilerFunc[*Widget](o.reconcile),
		controller.WithFinalizers(fins, crs))
	require.NoError(t, err)
	o.c, err = controller.New("widgets", r, controller.Options[controller.Key]{
		RateLimiter: kworkqueue.NewTypedItemExponentialFailureRateLimiter[controller.Key](5*time.Millisecond, 200*time.Millisecond),
		Fences:      &controller.Fences{Auto: true},
	})
	require.NoError(t, err)
	require.NoError(t, controller.Watch(o.c, widgets, controller.EnqueueObject))
	env.RunController(env.Context(), o.c)
	return o
}

func (o *widgetOperator) reconcile(ctx context.Context, w *Widget) (controller.Result, error) {
	o.mu.Lock()
	o.calls++
	if w.DeletionTimestamp != nil || !finalizer.Has(w, cleanupFinalizer) {
		o.violations = append(o.violations, fmt.Sprintf("%s at %s: deletionTimestamp %v, finalizers %v", w.Name, w.ResourceVersion, w.DeletionTimestamp, w.Finalizers))
	}
	o.mu.Unlock()
	_, res, err := client.PatchStatus(ctx, o.crs, w, func(w *Widget) error {
		w.Status.Size = w.Spec.Size
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue,
			Reason: "Sized", Message: fmt.Sprintf("size %d", w.Spec.Size)})
		return nil
	})
	o.mu.Lock()
	o.results = append(o.results, res)
	o.mu.Unlock()
	return controller.Result{}, err
}

// statusWrites counts the passes that wrote the status, and the passes.
func (o *widgetOperator) statusWrites() (writes, passes int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range o.results {
		if r != client.OperationResultNone {
			writes++
		}
	}
	return writes, len(o.results)
}

// operatorJourney drives a Widget through its life under the operator: created (finalizer
// added before the first Reconcile, status written once), reconciled again with nothing to do
// (no write), its spec changed (status and conditions at the new generation), deleted with a
// cleanup that fails once (retried; the object goes; r never sees it deleting).
func operatorJourney(t *testing.T, env *testkit.Env) {
	ctx, ns := env.Context(), env.Namespace()
	o := startWidgetOperator(t, env)
	key := controller.Key{Namespace: ns, Name: "w"}
	stored := func() *Widget {
		w, err := o.crs.Get(ctx, ns, "w", metav1.GetOptions{})
		require.NoError(t, err)
		return w
	}
	settled := func(w *Widget, size int32) bool {
		ready := meta.FindStatusCondition(w.Status.Conditions, "Ready")
		return finalizer.Has(w, cleanupFinalizer) && w.Status.Size == size && w.Status.ObservedGeneration == w.Generation &&
			ready != nil && ready.ObservedGeneration == w.Generation
	}

	_, err := o.crs.Create(ctx, &Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}, Spec: WidgetSpec{Size: 2}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return settled(stored(), 2) }, operatorWait, 5*time.Millisecond)
	env.WaitForQuiet(operatorWait)
	writes, passes := o.statusWrites()
	assert.Equal(t, 1, writes, "the status is written once: fenced, the next pass sees it")

	// A pass with nothing new writes nothing.
	o.c.Enqueue(key)
	require.Eventually(t, func() bool { _, p := o.statusWrites(); return p > passes }, operatorWait, 5*time.Millisecond)
	env.WaitForQuiet(operatorWait)
	writes, _ = o.statusWrites()
	assert.Equal(t, 1, writes)
	rv := stored().ResourceVersion
	env.WaitForQuiet(operatorWait)
	assert.Equal(t, rv, stored().ResourceVersion, "nothing written while nothing changes")

	// A spec change: the status follows at the new generation.
	w := stored()
	w.Spec.Size = 3
	_, err = o.crs.Update(ctx, w, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { w := stored(); return w.Generation == 2 && settled(w, 3) }, operatorWait, 5*time.Millisecond)
	env.WaitForQuiet(operatorWait)
	writes, _ = o.statusWrites()
	assert.Equal(t, 2, writes)

	// Deleted: the cleanup fails once, is retried, then the finalizer goes and so does the object.
	o.mu.Lock()
	o.failures = 1
	o.mu.Unlock()
	require.NoError(t, o.crs.Delete(ctx, ns, "w", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, err := o.crs.Get(ctx, ns, "w", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, operatorWait, 5*time.Millisecond)
	env.WaitForQuiet(operatorWait)

	o.mu.Lock()
	defer o.mu.Unlock()
	assert.Equal(t, 2, o.attempts, "one failure, one retry")
	assert.Equal(t, 1, o.cleanups)
	assert.Empty(t, o.violations, "the ObjectReconciler got only live objects carrying the finalizer")
}

// The journey on the fake cluster, Widgets declared as their CRD would.
func TestObjectReconcilerOperatorOnFake(t *testing.T) {
	env := testkit.NewFakeWithOptions(t, testkit.FakeOptions{Resources: []fakecluster.Resource{widgetResource}})
	operatorJourney(t, env.Env)
}

// A status written with client.PatchStatus by an object reconciler fences the key like any
// other write (Fences.Auto): while the informer's watch is held back, the requeued key waits
// (Stats.Fenced) instead of reading the old status and writing it again.
func TestObjectReconcilerStatusWriteIsFenced(t *testing.T) {
	cluster, err := fakecluster.New(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}})
	require.NoError(t, err)
	open := gateWatches(cluster, "deployments")
	f := informer.NewFactory(cluster.Clientset(), informer.Options{})
	deployments, err := informer.For[*appsv1.Deployment](f)
	require.NoError(t, err)
	deps, err := client.For[*appsv1.Deployment](cluster.Clientset())
	require.NoError(t, err)

	var passes, writes atomic.Int32
	r, err := controller.AsReconciler(deployments.Lister(), controller.ObjectReconcilerFunc[*appsv1.Deployment](
		func(ctx context.Context, d *appsv1.Deployment) (controller.Result, error) {
			passes.Add(1)
			_, res, err := client.PatchStatus(ctx, deps, d, func(d *appsv1.Deployment) error {
				d.Status.ReadyReplicas = 1
				return nil
			})
			if res == client.OperationResultNone {
				return controller.Result{}, err
			}
			writes.Add(1)
			return controller.Result{Requeue: true}, err // look again at once: the fence decides when
		}))
	require.NoError(t, err)
	c, err := controller.New("status", r, controller.Options[controller.Key]{Fences: &controller.Fences{Auto: true, TTL: time.Hour}})
	require.NoError(t, err)
	require.NoError(t, controller.Watch(c, deployments, controller.EnqueueObject))
	runWithInformers(t, f, c)

	require.Eventually(t, func() bool { return c.Stats().Fenced == 1 }, operatorWait, time.Millisecond)
	assert.Equal(t, int32(1), passes.Load(), "held until the informer shows the status write")
	open()
	require.Eventually(t, func() bool { return passes.Load() >= 2 && c.Stats().Idle() }, operatorWait, time.Millisecond,
		"passes %d, stats %+v", passes.Load(), c.Stats())
	assert.Equal(t, int32(1), writes.Load(), "the passes after the fence saw the status: no second write")
}
