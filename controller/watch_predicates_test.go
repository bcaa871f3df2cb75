package controller_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/predicate"
	"github.com/ctrlkit/ctrlkit/testkit"
)

const waitTimeout = 10 * time.Second

// counter counts reconciles per key.
type counter struct {
	testkit.Recorder[controller.Key]
}

// counts returns the counts of the named keys, in order.
func (c *counter) counts(ns string, names ...string) []int {
	out := make([]int, len(names))
	for i, n := range names {
		out[i] = c.Count(controller.Key{Namespace: ns, Name: n})
	}
	return out
}

// Four controllers watch one real ConfigMap informer over the fake cluster,
// mapping each Deployment to the key its "target" label names: one without
// predicates (the witness that every event was delivered), one with
// GenerationChanged, one with LabelsChanged, one with a LabelSelector.
// (A Deployment, not a ConfigMap: a ConfigMap has no generation, so GenerationChanged drops
// every update of one, on kube-apiserver and on the fake.)
// A relabelling (metadata only: no new generation) moves the Deployment from
// key a to key b: GenerationChanged drops it whole, neither a nor b is
// reconciled; LabelsChanged passes it and both keys are.
func TestWatchPredicatesOnAnInformer(t *testing.T) {
	env := testkit.NewFake(t)
	ns := env.Namespace()
	deps, err := informer.For[*appsv1.Deployment](env.Factory())
	require.NoError(t, err)
	byTarget := func(d *appsv1.Deployment) []controller.Key {
		return []controller.Key{{Namespace: d.Namespace, Name: d.Labels["target"]}}
	}
	type Pred = predicate.Predicate[*appsv1.Deployment]
	run := func(name string, ps ...Pred) *counter {
		r := &counter{}
		c, err := controller.New(name, controller.Reconciler[controller.Key](r), controller.Options[controller.Key]{})
		require.NoError(t, err)
		require.NoError(t, controller.Watch(c, deps, byTarget, controller.WithPredicates(ps...)))
		env.RunController(env.Context(), c)
		return r
	}
	all := run("all")
	gen := run("generation", predicate.GenerationChanged[*appsv1.Deployment]())
	lbl := run("labels", predicate.LabelsChanged[*appsv1.Deployment]())
	sel := run("selector", predicate.LabelSelector[*appsv1.Deployment](labels.SelectorFromSet(labels.Set{"target": "a"})))

	// step writes, waits until the witness saw the event (so every handler
	// was handed it) and the controllers are quiet, and checks the counts of
	// keys a and b.
	ctx := env.Context()
	client := env.Client().AppsV1().Deployments(ns)
	step := func(what string, write func(), witness, wantGen, wantLbl, wantSel []int) {
		t.Helper()
		write()
		require.Eventually(t, func() bool { return assert.ObjectsAreEqual(witness, all.counts(ns, "a", "b")) }, waitTimeout, time.Millisecond,
			"%s: the unfiltered controller saw %v", what, all.counts(ns, "a", "b"))
		env.WaitForQuiet(waitTimeout)
		assert.Equal(t, witness, all.counts(ns, "a", "b"), "%s: no predicate", what)
		assert.Equal(t, wantGen, gen.counts(ns, "a", "b"), "%s: GenerationChanged", what)
		assert.Equal(t, wantLbl, lbl.counts(ns, "a", "b"), "%s: LabelsChanged", what)
		assert.Equal(t, wantSel, sel.counts(ns, "a", "b"), "%s: LabelSelector target=a", what)
	}
	get := func() *appsv1.Deployment {
		d, err := client.Get(ctx, "x", metav1.GetOptions{})
		require.NoError(t, err)
		return d
	}
	update := func(mod func(*appsv1.Deployment)) func() {
		return func() {
			d := get()
			mod(d)
			_, err := client.Update(ctx, d, metav1.UpdateOptions{})
			require.NoError(t, err)
		}
	}

	step("create with target=a", func() {
		d := newDeployment("x")
		d.Labels = map[string]string{"target": "a"}
		_, err := client.Create(ctx, d, metav1.CreateOptions{})
		require.NoError(t, err)
	}, []int{1, 0}, []int{1, 0}, []int{1, 0}, []int{1, 0})
	require.Equal(t, int64(1), get().Generation)

	step("relabel to target=b", update(func(d *appsv1.Deployment) { d.Labels["target"] = "b" }),
		[]int{2, 1},
		[]int{1, 0}, // the update is refused whole: neither the old key nor the new one
		[]int{2, 1}, // passed: both keys
		[]int{2, 1}) // the old object matched: seen once more, both keys
	require.Equal(t, int64(1), get().Generation, "labels are metadata: no new generation")

	step("change the spec", update(func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](3) }),
		[]int{2, 2},
		[]int{1, 1}, // a new generation
		[]int{2, 1}, // same labels
		[]int{2, 1}) // neither old nor new matches target=a any more
	require.Equal(t, int64(2), get().Generation)

	step("delete", func() { require.NoError(t, client.Delete(ctx, "x", metav1.DeleteOptions{})) },
		[]int{2, 3}, []int{1, 2}, []int{2, 2}, []int{2, 1})
}

// newDeployment is a valid Deployment of one replica.
func newDeployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
}

// statusWriter is a Reconciler that records the generation it observed in
// the Deployment's status, as controllers do, and counts its reconciles.
type statusWriter struct {
	deployments informer.Lister[*appsv1.Deployment]
	client      kubernetes.Interface
	mu          sync.Mutex
	reconciles  int
	writes      int
}

func (r *statusWriter) Reconcile(ctx context.Context, k controller.Key) (controller.Result, error) {
	r.mu.Lock()
	r.reconciles++
	r.mu.Unlock()
	d, err := r.deployments.Get(k.Namespace, k.Name)
	if err != nil {
		return controller.Result{}, nil // deleted
	}
	if d.Status.ObservedGeneration == d.Generation {
		return controller.Result{}, nil // nothing to do: an echo of our own write
	}
	d = d.DeepCopy()
	d.Status.ObservedGeneration = d.Generation
	if _, err := r.client.AppsV1().Deployments(k.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		return controller.Result{}, err
	}
	r.mu.Lock()
	r.writes++
	r.mu.Unlock()
	return controller.Result{}, nil
}

func (r *statusWriter) counts() (reconciles, writes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reconciles, r.writes
}

// GenerationChanged on the primary type: the controller's own status write
// does not reconcile it again, a spec change does. Without the predicate
// every status write costs one more reconcile that finds nothing to do.
func TestGenerationChangedSkipsOwnStatusWrites(t *testing.T) {
	for _, tc := range []struct {
		name           string
		opts           []controller.WatchOption[*appsv1.Deployment]
		afterCreate    int // reconciles once the create settled
		afterSpec      int // ... and a spec change
		afterForeignSt int // ... and someone else's status write
	}{
		{"GenerationChanged", []controller.WatchOption[*appsv1.Deployment]{
			controller.WithPredicates(predicate.GenerationChanged[*appsv1.Deployment]())}, 1, 2, 2},
		{"no predicate", nil, 2, 4, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := testkit.NewFake(t)
			ctx, ns := env.Context(), env.Namespace()
			deployments, err := informer.For[*appsv1.Deployment](env.Factory())
			require.NoError(t, err)
			r := &statusWriter{deployments: deployments.Lister(), client: env.Client()}
			c, err := controller.New("deployments", controller.Reconciler[controller.Key](r), controller.Options[controller.Key]{})
			require.NoError(t, err)
			require.NoError(t, controller.Watch(c, deployments, controller.EnqueueObject, tc.opts...))
			env.RunController(ctx, c)
			api := env.Client().AppsV1().Deployments(ns)
			observed := func(gen int64) func() bool {
				return func() bool {
					d, err := deployments.Lister().Get(ns, "web")
					return err == nil && d.Generation == gen && d.Status.ObservedGeneration == gen
				}
			}

			_, err = api.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
				Spec: appsv1.DeploymentSpec{Replicas: new(int32(1))}}, metav1.CreateOptions{})
			require.NoError(t, err)
			require.Eventually(t, observed(1), waitTimeout, time.Millisecond)
			env.WaitForQuiet(waitTimeout)
			reconciles, writes := r.counts()
			assert.Equal(t, tc.afterCreate, reconciles, "after create")
			assert.Equal(t, 1, writes)

			d, err := api.Get(ctx, "web", metav1.GetOptions{})
			require.NoError(t, err)
			d.Spec.Replicas = new(int32(3))
			_, err = api.Update(ctx, d, metav1.UpdateOptions{})
			require.NoError(t, err)
			require.Eventually(t, observed(2), waitTimeout, time.Millisecond, "a spec change is reconciled")
			env.WaitForQuiet(waitTimeout)
			reconciles, writes = r.counts()
			assert.Equal(t, tc.afterSpec, reconciles, "after a spec change")
			assert.Equal(t, 2, writes)

			// The price: a status written by someone else is not seen either.
			d, err = api.Get(ctx, "web", metav1.GetOptions{})
			require.NoError(t, err)
			d.Status.Replicas = 3
			st, err := api.UpdateStatus(ctx, d, metav1.UpdateOptions{})
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				d, err := deployments.Lister().Get(ns, "web")
				return err == nil && d.ResourceVersion == st.ResourceVersion
			}, waitTimeout, time.Millisecond)
			env.WaitForQuiet(waitTimeout)
			reconciles, _ = r.counts()
			assert.Equal(t, tc.afterForeignSt, reconciles, "after a foreign status write")
		})
	}
}

// Owns on the fake cluster: a Pod's status write reaches its ReplicaSet, an
// orphan reaches nothing.
func TestOwnsOnAnInformer(t *testing.T) {
	env := testkit.NewFake(t)
	ctx, ns := env.Context(), env.Namespace()
	pods, err := informer.For[*corev1.Pod](env.Factory())
	require.NoError(t, err)
	r := &counter{}
	c, err := controller.New("replicaset", controller.Reconciler[controller.Key](r), controller.Options[controller.Key]{})
	require.NoError(t, err)
	replicaSets, err := informer.For[*appsv1.ReplicaSet](env.Factory())
	require.NoError(t, err)
	require.NoError(t, controller.Owns(c, pods, replicaSets))
	env.RunController(ctx, c)

	rs, err := env.Client().AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	pod, err := env.Client().CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Client().CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orphan"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return r.counts(ns, "web")[0] == 1 }, waitTimeout, time.Millisecond)
	env.WaitForQuiet(waitTimeout)

	pod.Status.Phase = corev1.PodRunning
	_, err = env.Client().CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return r.counts(ns, "web")[0] == 2 }, waitTimeout, time.Millisecond)
	env.WaitForQuiet(waitTimeout)
	assert.Equal(t, []int{2, 0, 0}, r.counts(ns, "web", "orphan", ""))
}

// An owner missing from its synced cache is enqueued by its child's event only when the
// controller does not watch the owners: an owner created just before its child can reach the
// owners' cache after the child's event, and with no watch of its own nothing else would
// enqueue it. A controller that watches them drops the event: the owner's add is to come, or
// the owner is gone (kube-controller-manager's rule).
func TestOwnsEnqueuesAnUncachedOwnerOnlyWhenTheOwnersAreNotWatched(t *testing.T) {
	for _, watchOwners := range []bool{false, true} {
		t.Run(fmt.Sprintf("watched=%v", watchOwners), func(t *testing.T) {
			env := testkit.NewFake(t)
			ctx, ns := env.Context(), env.Namespace()
			pods, err := informer.For[*corev1.Pod](env.Factory())
			require.NoError(t, err)
			replicaSets, err := informer.For[*appsv1.ReplicaSet](env.Factory())
			require.NoError(t, err)
			r := &counter{}
			c, err := controller.New("replicaset", controller.Reconciler[controller.Key](r), controller.Options[controller.Key]{})
			require.NoError(t, err)
			require.NoError(t, controller.Owns(c, pods, replicaSets))
			if watchOwners {
				require.NoError(t, controller.Watch(c, replicaSets, controller.EnqueueObject[*appsv1.ReplicaSet]))
			}
			env.RunController(ctx, c)
			require.Eventually(t, c.HasSynced, waitTimeout, time.Millisecond)

			// The Pod names a ReplicaSet the cache does not hold.
			_, err = env.Client().CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0",
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-uid", Controller: new(true)}}}}, metav1.CreateOptions{})
			require.NoError(t, err)
			want := 0
			if !watchOwners {
				want = 1
				require.Eventually(t, func() bool { return r.counts(ns, "web")[0] == 1 }, waitTimeout, time.Millisecond)
			}
			env.WaitForQuiet(waitTimeout)
			assert.Equal(t, []int{want}, r.counts(ns, "web"))
		})
	}
}

// Owns's own watch of an informer is no watch of the owners: ConfigMaps
// owning ConfigMaps, with Owns alone, enqueue an owner missing from the cache.
func TestOwnsOfItsOwnKindEnqueuesAnUncachedOwner(t *testing.T) {
	env := testkit.NewFake(t)
	ctx, ns := env.Context(), env.Namespace()
	cms, err := informer.For[*corev1.ConfigMap](env.Factory())
	require.NoError(t, err)
	r := &counter{}
	c, err := controller.New("configmaps", controller.Reconciler[controller.Key](r), controller.Options[controller.Key]{})
	require.NoError(t, err)
	require.NoError(t, controller.Owns(c, cms, cms))
	env.RunController(ctx, c)
	require.Eventually(t, c.HasSynced, waitTimeout, time.Millisecond)

	_, err = env.Client().CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "child",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "parent", UID: "parent-uid", Controller: new(true)}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return r.counts(ns, "parent")[0] == 1 }, waitTimeout, time.Millisecond)
	env.WaitForQuiet(waitTimeout)
	assert.Equal(t, []int{1, 0}, r.counts(ns, "parent", "child"))
}
