package controller

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	kworkqueue "k8s.io/client-go/util/workqueue"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/predicate"
)

// addRecorder is a queue for informer.EnqueueMapped that records what was added, in order.
type addRecorder[K comparable] struct{ added []K }

func (a *addRecorder[K]) Add(k K) { a.added = append(a.added, k) }

// capturingInformer is an informer.Informer whose AddHandler keeps the
// handler, so a test can drive it with hand-made events. Methods it does not
// override are not called by Watch.
type capturingInformer[T informer.Object] struct {
	anInformer[T]
	h    informer.Handler[T]
	gvk  schema.GroupVersionKind
	gvr  schema.GroupVersionResource
	adds int // AddHandler calls
}

// anInformer lets capturingInformer embed the interface under a name that
// does not clash with its Informer method.
type anInformer[T informer.Object] = informer.Informer[T]

func (c *capturingInformer[T]) Name() string                        { return "capturing" }
func (c *capturingInformer[T]) Informer() cache.SharedIndexInformer { return nil }
func (c *capturingInformer[T]) GVK() schema.GroupVersionKind        { return c.gvk }
func (c *capturingInformer[T]) GVR() schema.GroupVersionResource    { return c.gvr }
func (c *capturingInformer[T]) HasSynced() bool                     { return false }
func (c *capturingInformer[T]) Lister() informer.Lister[T]          { return emptyLister[T]{} }
func (c *capturingInformer[T]) AddHandler(h informer.Handler[T]) (cache.ResourceEventHandlerRegistration, error) {
	c.h = h
	c.adds++
	return nil, nil
}

// emptyLister finds nothing.
type emptyLister[T informer.Object] struct{ informer.Lister[T] }

func (emptyLister[T]) Get(namespace, name string) (T, error) {
	var zero T
	return zero, apierrors.NewNotFound(schema.GroupResource{}, name)
}

// registered runs the registration Run would run for c's only watch and
// returns the handler it added, feeding a real queue whose keys keys drains.
func registered[T informer.Object](t *testing.T, c *Controller[Key], inf *capturingInformer[T]) (h informer.Handler[T], keys func() []Key) {
	t.Helper()
	require.Len(t, c.watches, 1)
	q := kworkqueue.NewTypedRateLimitingQueue(kworkqueue.DefaultTypedControllerRateLimiter[Key]())
	t.Cleanup(q.ShutDown)
	_, err := c.watches[0].register(adaptQueue(q, false), false, nil)
	require.NoError(t, err)
	require.NotNil(t, inf.h)
	return inf.h, func() []Key {
		var out []Key
		for q.Len() > 0 {
			k, _ := q.Get()
			q.Done(k)
			q.Forget(k)
			out = append(out, k)
		}
		return out
	}
}

func newTestController(t *testing.T) *Controller[Key] {
	t.Helper()
	c, err := New("predicates", Reconciler[Key](&keyRecorder{}), Options[Key]{})
	require.NoError(t, err)
	return c
}

func labelled(name, target, rv string, gen int64) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv, Generation: gen,
		Labels: map[string]string{"target": target}}}
}

// byTarget maps a ConfigMap to the key its "target" label names.
func byTarget(cm *corev1.ConfigMap) []Key { return []Key{{Namespace: "ns", Name: cm.Labels["target"]}} }

// Predicates run before the mapping: a refused update enqueues neither the
// old nor the new key, a passed one both; creates and deletes are filtered
// with their own methods, tombstones included.
func TestWatchPredicatesFilterBeforeTheMapping(t *testing.T) {
	c := newTestController(t)
	inf := &capturingInformer[*corev1.ConfigMap]{}
	require.NoError(t, Watch(c, inf, byTarget, WithPredicates(predicate.GenerationChanged[*corev1.ConfigMap]())))
	h, keys := registered(t, c, inf)
	a, b := Key{Namespace: "ns", Name: "a"}, Key{Namespace: "ns", Name: "b"}

	h.HandleAdd(labelled("x", "a", "1", 1), true)
	assert.Equal(t, []Key{a}, keys(), "creates pass GenerationChanged")
	h.HandleUpdate(labelled("x", "a", "1", 1), labelled("x", "b", "2", 1))
	assert.Empty(t, keys(), "a refused update enqueues neither the old nor the new key")
	h.HandleUpdate(labelled("x", "a", "2", 1), labelled("x", "b", "3", 2))
	assert.ElementsMatch(t, []Key{a, b}, keys(), "a passed update enqueues both keys")
	h.HandleDelete(labelled("x", "b", "3", 2), informer.DeleteInfo{Key: "ns/x", FinalStateUnknown: true})
	assert.Equal(t, []Key{b}, keys(), "tombstones pass GenerationChanged")
}

// Several predicates (in one WithPredicates or several) must all pass.
func TestWatchPredicatesAddUp(t *testing.T) {
	c := newTestController(t)
	inf := &capturingInformer[*corev1.ConfigMap]{}
	var asked []string
	spy := func(name string, answer bool) predicate.Predicate[*corev1.ConfigMap] {
		return predicate.Funcs[*corev1.ConfigMap]{CreateFunc: func(predicate.CreateEvent[*corev1.ConfigMap]) bool {
			asked = append(asked, name)
			return answer
		}}
	}
	require.NoError(t, Watch(c, inf, byTarget,
		WithPredicates(spy("first", true), spy("second", true)), nil, WithPredicates(spy("third", false), spy("fourth", true))))
	h, keys := registered(t, c, inf)
	h.HandleAdd(labelled("x", "a", "1", 1), false)
	assert.Empty(t, keys())
	assert.Equal(t, []string{"first", "second", "third"}, asked, "asked in order until one refuses")
}

func TestWatchRefusesInvalidPredicates(t *testing.T) {
	c := newTestController(t)
	inf := &capturingInformer[*corev1.ConfigMap]{}
	err := Watch(c, inf, byTarget, WithPredicates(predicate.LabelsChanged[*corev1.ConfigMap](), predicate.And[*corev1.ConfigMap](nil)))
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrInvalidOptions)
	assert.ErrorIs(t, err, predicate.ErrInvalidPredicate)
	assert.Equal(t, `controller "predicates": watching capturing: invalid options: predicate 1: invalid predicate: And[0]: nil`, err.Error())
	assert.Empty(t, c.watches, "nothing registered")
}

// Owns is Watch with EnqueueControllerOf that drops resyncs: a status write
// of a child reaches its owner, a resync does not, an owner change reaches
// both owners.
func TestOwns(t *testing.T) {
	c := newTestController(t)
	inf := &capturingInformer[*corev1.Pod]{}
	replicaSets := &capturingInformer[*appsv1.ReplicaSet]{gvk: rsKind, gvr: appsv1.SchemeGroupVersion.WithResource("replicasets")}
	require.NoError(t, Owns(c, inf, replicaSets))
	h, keys := registered(t, c, inf)
	web, api := replicaSet("ns", "web"), replicaSet("ns", "api")
	webKey, apiKey := Key{Namespace: "ns", Name: "web"}, Key{Namespace: "ns", Name: "api"}
	at := func(p *corev1.Pod, rv string) *corev1.Pod { p.ResourceVersion = rv; return p }

	h.HandleAdd(podOf("ns", "p", web), false)
	assert.Equal(t, []Key{webKey}, keys())
	h.HandleUpdate(at(podOf("ns", "p", web), "1"), at(podOf("ns", "p", web), "2"))
	assert.Equal(t, []Key{webKey}, keys(), "a real change reaches the owner")
	h.HandleUpdate(at(podOf("ns", "p", web), "2"), at(podOf("ns", "p", web), "2"))
	assert.Empty(t, keys(), "a resync is dropped")
	h.HandleUpdate(at(podOf("ns", "p", web), "2"), at(podOf("ns", "p", api), "3"))
	assert.ElementsMatch(t, []Key{webKey, apiKey}, keys(), "a new controller: both owners")
	h.HandleAdd(podOf("ns", "orphan", nil), false)
	h.HandleDelete(podOf("ns", "p", api), informer.DeleteInfo{Key: "ns/p"})
	assert.Equal(t, []Key{apiKey}, keys(), "orphans map to nothing; deletes reach the owner")

	// Options add predicates of their own.
	c2 := newTestController(t)
	inf2 := &capturingInformer[*corev1.Pod]{}
	require.NoError(t, Owns(c2, inf2, replicaSets, WithPredicates(predicate.Funcs[*corev1.Pod]{
		DeleteFunc: func(predicate.DeleteEvent[*corev1.Pod]) bool { return false },
	})))
	h2, keys2 := registered(t, c2, inf2)
	h2.HandleDelete(podOf("ns", "p", web), informer.DeleteInfo{Key: "ns/p"})
	assert.Empty(t, keys2())
	h2.HandleAdd(podOf("ns", "p", web), false)
	assert.Equal(t, []Key{webKey}, keys2())
}

// Owns refuses what no owner reference can serve, and nil arguments.
func TestOwnsRefusesAWiringThatCannotWork(t *testing.T) {
	c := newTestController(t)
	owners := &capturingInformer[*appsv1.ReplicaSet]{gvk: rsKind, gvr: appsv1.SchemeGroupVersion.WithResource("replicasets")}
	namespaces := &capturingInformer[*corev1.Namespace]{gvr: corev1.SchemeGroupVersion.WithResource("namespaces")}
	err := Owns(c, namespaces, owners)
	assert.ErrorIs(t, err, ErrInvalidOptions)
	assert.ErrorContains(t, err, `invalid Owns: namespaces are cluster-scoped and replicasets.apps namespaced`)
	assert.Empty(t, c.watches, "nothing registered")

	assert.ErrorIs(t, Owns(nil, &capturingInformer[*corev1.Pod]{}, owners), ErrInvalidOptions)
	assert.ErrorIs(t, Owns[*corev1.Pod](c, nil, owners), ErrInvalidOptions)
	assert.ErrorIs(t, Owns[*corev1.Pod, *appsv1.ReplicaSet](c, &capturingInformer[*corev1.Pod]{}, nil), ErrInvalidOptions)
}

// Without predicates Watch registers the bare mapping: the event path has no
// extra layer and no extra allocation. With predicates the filter allocates
// nothing per event either.
func TestWatchHandlerAllocations(t *testing.T) {
	keys := []Key{{Namespace: "ns", Name: "a"}}
	mapFn := func(*appsv1.ReplicaSet) []Key { return keys } // allocation-free
	q := &addRecorder[Key]{added: make([]Key, 0, 1<<16)}
	oldRS, newRS := replicaSet("ns", "a"), replicaSet("ns", "a")
	newRS.ResourceVersion, newRS.Generation = "2", 2

	bare := watchHandler(nil, informer.EnqueueMapped[*appsv1.ReplicaSet, Key](q, mapFn), nil)
	assert.Equal(t, fmt.Sprintf("%T", informer.EnqueueMapped[*appsv1.ReplicaSet, Key](q, mapFn)), fmt.Sprintf("%T", bare),
		"without predicates the handler is the bare mapping")
	withPreds := watchHandler(nil, informer.EnqueueMapped[*appsv1.ReplicaSet, Key](q, mapFn), []predicate.Predicate[*appsv1.ReplicaSet]{
		predicate.GenerationChanged[*appsv1.ReplicaSet](), predicate.ResourceVersionChanged[*appsv1.ReplicaSet](),
	})
	for name, h := range map[string]informer.Handler[*appsv1.ReplicaSet]{"none": bare, "two": withPreds} {
		allocs := testing.AllocsPerRun(1000, func() {
			q.added = q.added[:0]
			h.HandleAdd(newRS, false)
			h.HandleUpdate(oldRS, newRS)
			h.HandleDelete(newRS, informer.DeleteInfo{Key: "ns/a"})
		})
		assert.Zero(t, allocs, "predicates %s: allocations per event triple", name)
		assert.Len(t, q.added, 3, "predicates %s: every event passed", name)
	}
}
