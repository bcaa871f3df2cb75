package controller

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	kworkqueue "k8s.io/client-go/util/workqueue"

	"github.com/ctrlkit/ctrlkit/informer"
)

var rsKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

func replicaSet(ns, name string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-rs-" + name), ResourceVersion: "1"}}
}

func podOf(ns, name string, owner *appsv1.ReplicaSet) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1"}}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, rsKind)}
	}
	return p
}

// keyRecorder is a Reconciler that records every key it sees.
type keyRecorder struct {
	mu   sync.Mutex
	seen map[Key]int
}

func (r *keyRecorder) Reconcile(_ context.Context, k Key) (Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[Key]int{}
	}
	r.seen[k]++
	return Result{}, nil
}

func (r *keyRecorder) count(k Key) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[k]
}

func (r *keyRecorder) keys() map[Key]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[Key]int, len(r.seen))
	for k, v := range r.seen {
		out[k] = v
	}
	return out
}

func TestEnqueueMappings(t *testing.T) {
	rs := replicaSet("ns", "web")
	rs.UID = "rs-uid"
	assert.Equal(t, []Key{{Namespace: "ns", Name: "web"}}, EnqueueObject(rs))

	f := informer.NewFactory(fake.NewClientset(rs), informer.Options{})
	rsInf, err := informer.For[*appsv1.ReplicaSet](f)
	require.NoError(t, err)
	toOwner := EnqueueControllerOf[*corev1.Pod](rsInf)
	assert.Equal(t, []Key{{Namespace: "ns", Name: "web"}}, toOwner(podOf("ns", "web-1", rs)),
		"before the owners' cache synced, the key the scope allows")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f.Start(ctx)
	defer f.Shutdown()
	require.NoError(t, f.WaitForCacheSync(ctx))

	assert.Equal(t, []Key{{Namespace: "ns", Name: "web"}}, toOwner(podOf("ns", "web-1", rs)))
	assert.Empty(t, toOwner(podOf("ns", "orphan", nil)))
	other := podOf("ns", "job-pod", nil)
	other.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "web", UID: "rs-uid", Controller: new(true)}}
	assert.Empty(t, toOwner(other), "an owner of another kind is not ours")
	recreated := replicaSet("ns", "web")
	recreated.UID = "old-uid"
	assert.Empty(t, toOwner(podOf("ns", "web-0", recreated)), "a reference to another object of the owner's name is not ours")
	assert.Empty(t, toOwner(podOf("ns", "web-9", replicaSet("ns", "gone"))), "an owner not in the synced cache enqueues nothing")
	var none informer.Informer[*appsv1.ReplicaSet]
	assert.Empty(t, EnqueueControllerOf[*corev1.Pod](none)(podOf("ns", "web-1", rs)), "nil owners: nothing, no panic")
}

// The snippet, end to end on a fake clientset: ReplicaSets map to
// themselves, Pods to their controlling ReplicaSet; Run waits for both
// caches, so the first Reconcile already sees every initial object.
func TestWatchConnectsInformerEventsToTheQueue(t *testing.T) {
	rs := replicaSet("ns", "web")
	client := fake.NewClientset(rs, podOf("ns", "web-1", rs), podOf("ns", "orphan", nil))
	f := informer.NewFactory(client, informer.Options{})
	rsInf, err := informer.For[*appsv1.ReplicaSet](f)
	require.NoError(t, err)
	podInf, err := informer.For[*corev1.Pod](f)
	require.NoError(t, err)

	var (
		mu            sync.Mutex
		podsAtFirst   = -1
		rec           keyRecorder
		recordedFirst bool
	)
	r := ReconcilerFunc[Key](func(ctx context.Context, k Key) (Result, error) {
		mu.Lock()
		if !recordedFirst {
			recordedFirst = true
			pods, _ := podInf.Lister().List(labelsEverything())
			podsAtFirst = len(pods)
		}
		mu.Unlock()
		return rec.Reconcile(ctx, k)
	})
	c, err := New("replicaset", Reconciler[Key](r), Options[Key]{Workers: 2})
	require.NoError(t, err)
	require.NoError(t, Watch(c, rsInf, EnqueueObject))
	require.NoError(t, Watch(c, podInf, EnqueueControllerOf[*corev1.Pod](rsInf)))

	ctx, _ := testLogger(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f.Start(ctx)
	defer f.Shutdown()
	stop := startController(t, ctx, c)

	web := Key{Namespace: "ns", Name: "web"}
	require.Eventually(t, func() bool { return rec.count(web) >= 1 }, 10*time.Second, time.Millisecond)
	assert.True(t, c.HasSynced())
	mu.Lock()
	assert.Equal(t, 2, podsAtFirst, "Run started workers before the pod cache synced")
	mu.Unlock()

	// A new pod of the ReplicaSet, and its deletion, reach the owner's key.
	before := rec.count(web)
	_, err = client.CoreV1().Pods("ns").Create(ctx, podOf("ns", "web-2", rs), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return rec.count(web) > before }, 10*time.Second, time.Millisecond)
	waitIdle(t, c)
	before = rec.count(web)
	require.NoError(t, client.CoreV1().Pods("ns").Delete(ctx, "web-2", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return rec.count(web) > before }, 10*time.Second, time.Millisecond)
	waitIdle(t, c)
	stop()

	for k := range rec.keys() {
		assert.Equal(t, web, k, "only the ReplicaSet's key is reconciled (the orphan pod maps to nothing)")
	}
}

func TestWatchTypedMappingAndLifecycle(t *testing.T) {
	client := fake.NewClientset()
	f := informer.NewFactory(client, informer.Options{})
	cmInf, err := informer.For[*corev1.ConfigMap](f)
	require.NoError(t, err)
	var rec keyRecorder
	c, err := New("typed", Reconciler[Key](&rec), Options[Key]{})
	require.NoError(t, err)
	require.NoError(t, Watch(c, cmInf, func(cm *corev1.ConfigMap) []Key {
		return []Key{{Namespace: cm.Namespace, Name: "from-" + cm.Name}}
	}))
	assert.False(t, c.HasSynced(), "not synced before Run registered its watches")
	ctx, _ := testLogger(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f.Start(ctx)
	defer f.Shutdown()
	stop := startController(t, ctx, c)
	_, err = client.CoreV1().ConfigMaps("ns").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return rec.count(Key{Namespace: "ns", Name: "from-a"}) == 1 }, 10*time.Second, time.Millisecond)
	waitIdle(t, c)
	assert.True(t, c.HasSynced())
	err = Watch(c, cmInf, func(*corev1.ConfigMap) []Key { return nil })
	assert.ErrorIs(t, err, ErrAlreadyStarted, "watches are registered when Run starts")
	stop()

	// Run removed its handler: the shared informer, which outlives the
	// controller, no longer maps events into a stopped queue.
	assert.Eventually(t, func() bool { return cmInf.Informer().IsStopped() || handlerCount(cmInf) == 0 }, 10*time.Second, time.Millisecond)
	c.Enqueue(Key{Name: "late"})
	assert.Equal(t, 0, c.Stats().Queued, "Enqueue after Run returned is ignored")
}

// A controller runs again after Run returned, as a Manager runs it each time
// it wins back a lost Lease: the second term replays every cached object
// through its watches, sees events again, and a concurrent Run refuses.
func TestRunAgainAfterRunReturned(t *testing.T) {
	client := fake.NewClientset()
	f := informer.NewFactory(client, informer.Options{})
	cmInf, err := informer.For[*corev1.ConfigMap](f)
	require.NoError(t, err)
	var rec keyRecorder
	c, err := New("again", Reconciler[Key](&rec), Options[Key]{})
	require.NoError(t, err)
	require.NoError(t, Watch(c, cmInf, EnqueueObject[*corev1.ConfigMap]))
	ctx, _ := testLogger(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f.Start(ctx)
	defer f.Shutdown()
	a, b := Key{Namespace: "ns", Name: "a"}, Key{Namespace: "ns", Name: "b"}
	create := func(name string) {
		_, err := client.CoreV1().ConfigMaps("ns").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	stop := startController(t, ctx, c)
	create("a")
	require.Eventually(t, func() bool { return rec.count(a) == 1 }, 10*time.Second, time.Millisecond)
	waitIdle(t, c)
	stop()
	assert.False(t, c.HasSynced(), "a stopped controller has no handlers, so it has not synced")

	stop = startController(t, ctx, c)
	require.Eventually(t, func() bool { return rec.count(a) == 2 }, 10*time.Second, time.Millisecond,
		"the second term's watch replays the cached object")
	require.Eventually(t, c.HasSynced, 10*time.Second, time.Millisecond)
	assert.ErrorIs(t, c.Run(ctx), ErrAlreadyStarted, "one Run at a time")
	create("b")
	require.Eventually(t, func() bool { return rec.count(b) == 1 }, 10*time.Second, time.Millisecond,
		"the second term sees new events")
	waitIdle(t, c)
	stop()
	assert.Eventually(t, func() bool { return handlerCount(cmInf) == 0 }, 10*time.Second, time.Millisecond,
		"each term removes the handler it registered")

	// A prebuilt queue is shut down when Run returns: such a controller runs once.
	q := kworkqueue.NewTypedRateLimitingQueue(kworkqueue.DefaultTypedControllerRateLimiter[Key]())
	once, err := New("once", Reconciler[Key](&rec), Options[Key]{Queue: q})
	require.NoError(t, err)
	startController(t, ctx, once)()
	assert.ErrorIs(t, once.Run(ctx), ErrAlreadyStarted)
}

// handlerCount reports whether the informer still has handlers by adding and
// removing a probe: client-go has no accessor for the count.
func handlerCount(inf informer.Informer[*corev1.ConfigMap]) int {
	type counter interface{ HandlerCount() int }
	if c, ok := inf.Informer().(counter); ok {
		return c.HandlerCount()
	}
	return 0
}

// Keys enqueued before Run are kept and handed to the queue Run builds, and
// a controller built without Options.Metrics reports into the Metrics of
// Run's context.
func TestEnqueueBeforeRunAndMetricsFromContext(t *testing.T) {
	var rec keyRecorder
	c, err := New("early", Reconciler[Key](&rec), Options[Key]{})
	require.NoError(t, err)
	c.Enqueue(Key{Name: "x"})
	c.EnqueueAfter(Key{Name: "y"}, time.Millisecond)
	assert.Equal(t, Stats{Queued: 2}, c.Stats())
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	stop := startController(t, WithMetrics(ctx, m), c)
	require.Eventually(t, func() bool { return rec.count(Key{Name: "x"}) == 1 && rec.count(Key{Name: "y"}) == 1 }, 10*time.Second, time.Millisecond)
	stop()
	assert.Equal(t, 2.0, testutil.ToFloat64(m.adds.WithLabelValues("early", "early")))
	assert.Equal(t, 2.0, testutil.ToFloat64(m.reconcileTotal.WithLabelValues("early", resultSuccess)))
}

func TestWatchRejectsNil(t *testing.T) {
	c, err := New("nil", Reconciler[Key](&keyRecorder{}), Options[Key]{})
	require.NoError(t, err)
	assert.ErrorIs(t, Watch[*corev1.Pod](c, nil, EnqueueObject), ErrInvalidOptions)
	pods, err := informer.For[*corev1.Pod](informer.NewFactory(fake.NewClientset(), informer.Options{}))
	require.NoError(t, err)
	assert.ErrorIs(t, Watch[*corev1.Pod, Key](c, pods, nil), ErrInvalidOptions)
	assert.ErrorIs(t, Watch[*corev1.Pod, Key](nil, pods, EnqueueObject), ErrInvalidOptions)
}
