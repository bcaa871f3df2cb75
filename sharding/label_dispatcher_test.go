package sharding

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// dynWriter patches through the fake cluster's dynamic client, with
// faults: conflicts fail the next calls without writing, lose loses the
// reply of the next writes. Each call is logged in the shared log.
type dynWriter struct {
	d   dynamic.Interface
	log *eventLog

	mu        sync.Mutex
	conflicts int
	lose      int
	calls     int
}

func (w *dynWriter) patch(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, data []byte) (*metav1.PartialObjectMetadata, error) {
	w.mu.Lock()
	w.calls++
	conflict := w.conflicts > 0
	if conflict {
		w.conflicts--
	}
	w.mu.Unlock()
	w.log.add("patch " + name)
	if conflict {
		return nil, apierrors.NewConflict(gvr.GroupResource(), name, fmt.Errorf("injected"))
	}
	u, err := w.d.Resource(gvr).Namespace(ns).Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{})
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lose > 0 {
		w.lose--
		return nil, fmt.Errorf("reply to the patch of %s lost", name)
	}
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ResourceVersion: u.GetResourceVersion()}}, nil
}

type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

type dispatcherEnv struct {
	env        *testkit.FakeEnv
	cms        informer.Informer[*corev1.ConfigMap]
	secrets    informer.Informer[*corev1.Secret]
	dispatcher *labelDispatcher[controller.Key]
	w          *dynWriter
	log        *eventLog
	enqueued   chan controller.Key
	metrics    *Metrics
}

func newDispatcherEnv(t *testing.T, clk clock.WithTicker, objs ...*corev1.ConfigMap) *dispatcherEnv {
	t.Helper()
	var seed []runtime.Object
	for _, o := range objs {
		seed = append(seed, o)
	}
	env := testkit.NewFake(t, seed...)
	cfg := Config{Ring: "r", Identity: "m", LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 300 * time.Millisecond}.WithDefaults()
	sel := Selector("r", "m")
	cms, err := informer.For[*corev1.ConfigMap](env.Factory(), informer.WithLabelSelector[*corev1.ConfigMap](sel))
	require.NoError(t, err)
	secrets, err := informer.For[*corev1.Secret](env.Factory(), informer.WithLabelSelector[*corev1.Secret](sel))
	require.NoError(t, err)
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	ge := &dispatcherEnv{env: env, cms: cms, secrets: secrets, log: &eventLog{}, enqueued: make(chan controller.Key, 100), metrics: m}
	ge.w = &dynWriter{d: env.Dynamic(), log: ge.log}
	ge.dispatcher = newDispatcher(cfg, testHolder, cms, func(k controller.Key) { ge.enqueued <- k }, ge.w,
		DispatcherOptions{Children: []Source{secrets}, Metrics: m, Clock: clk, BarrierTimeout: time.Second})
	env.Sync()
	ctx, cancel := context.WithCancel(env.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		assert.NoError(t, ge.dispatcher.Run(ctx))
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ge
}

// testHolder is the dispatcher's member process, the holder of its Lease.
const testHolder = "m_0"

// configMap is an object; labelled for the test's member "m", it is also
// stamped for the member's process, as the sharder does.
func configMap(name string, labels, annotations map[string]string) *corev1.ConfigMap {
	if labels[Label("r")] == "m" {
		if _, ok := annotations[HolderAnnotation("r")]; !ok {
			annotations = maps.Clone(annotations)
			if annotations == nil {
				annotations = map[string]string{}
			}
			annotations[HolderAnnotation("r")] = testHolder
		}
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: labels, Annotations: annotations}}
}

func (ge *dispatcherEnv) stored(t *testing.T, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := ge.env.Client().CoreV1().ConfigMaps("default").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return cm
}

// label patches the labels of name; labelled for "m", it is stamped for the
// member's process too.
func (ge *dispatcherEnv) label(t *testing.T, name string, labels map[string]*string) {
	t.Helper()
	var ann map[string]*string
	if v := labels[Label("r")]; v != nil && *v == "m" {
		ann = map[string]*string{HolderAnnotation("r"): ptr(testHolder)}
	}
	_, err := ge.env.Client().CoreV1().ConfigMaps("default").Patch(context.Background(), name, types.MergePatchType,
		metaPatch(ge.stored(t, name).ResourceVersion, labels, ann), metav1.PatchOptions{})
	require.NoError(t, err)
}

func (ge *dispatcherEnv) cached(name string) *corev1.ConfigMap {
	cm, err := ge.cms.Lister().Get("default", name)
	if err != nil {
		return nil
	}
	return cm
}

func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, 10*time.Second, time.Millisecond, msg)
}

var keyX = controller.Key{Namespace: "default", Name: "x"}

// awaitEnqueued waits up to 10 s for the dispatcher to enqueue a key, checks
// that it is key, and fails with missing when none comes.
func (ge *dispatcherEnv) awaitEnqueued(t *testing.T, key controller.Key, missing string) {
	t.Helper()
	select {
	case k := <-ge.enqueued:
		assert.Equal(t, key, k)
	case <-time.After(10 * time.Second):
		t.Fatal(missing)
	}
}

// A drain waits for the in-flight Reconcile, is acknowledged with one
// patch, and the key stays refused after the object left the cache, until
// it is assigned here again.
func TestDispatcherAcknowledgesADrainAfterTheReconcile(t *testing.T) {
	ge := newDispatcherEnv(t, clock.RealClock{}, configMap("x", map[string]string{Label("r"): "m"}, nil))
	eventually(t, func() bool { return ge.cached("x") != nil }, "x cached")
	require.True(t, ge.dispatcher.Admit(keyX))

	ge.label(t, "x", map[string]*string{DrainLabel("r"): ptr("true")})
	eventually(t, func() bool { return ge.cached("x") != nil && ge.cached("x").Labels[DrainLabel("r")] != "" }, "the dispatcher saw the drain")
	assert.False(t, ge.dispatcher.Admit(keyX), "a draining key is not dispatched")
	assert.Equal(t, "m", ge.stored(t, "x").Labels[Label("r")], "not acknowledged while the Reconcile runs")

	ge.log.add("release x")
	ge.dispatcher.Release(keyX)
	eventually(t, func() bool { return ge.stored(t, "x").Labels[Label("r")] == "" }, "acknowledged")
	assert.Equal(t, []string{"release x", "patch x"}, ge.log.all())
	assert.Empty(t, ge.stored(t, "x").Labels[DrainLabel("r")])

	eventually(t, func() bool { return ge.cached("x") == nil }, "x left the cache")
	assert.False(t, ge.dispatcher.Admit(keyX), "a handed-over key is not mistaken for a deleted one")

	ge.label(t, "x", map[string]*string{Label("r"): ptr("m")})
	eventually(t, func() bool { return ge.cached("x") != nil }, "x back in the cache")
	// Refused only while the acknowledgement's reply is still on its way,
	// and then enqueued again.
	if !ge.dispatcher.Admit(keyX) {
		ge.awaitEnqueued(t, keyX, "a key refused during the acknowledgement was not enqueued again")
		require.True(t, ge.dispatcher.Admit(keyX), "assigned here again")
	}
	ge.dispatcher.Release(keyX)
}

// An acknowledgement that fails with a Conflict, then one whose reply is
// lost, end with the labels removed once and the key refused throughout.
func TestDispatcherAcknowledgementSurvivesConflictsAndLostReplies(t *testing.T) {
	ge := newDispatcherEnv(t, clock.RealClock{})
	ge.w.conflicts, ge.w.lose = 1, 1
	_, err := ge.env.Client().CoreV1().ConfigMaps("default").Create(context.Background(),
		configMap("x", map[string]string{Label("r"): "m", DrainLabel("r"): "true"}, nil), metav1.CreateOptions{})
	require.NoError(t, err)
	eventually(t, func() bool { return ge.cached("x") != nil && ge.cached("x").Labels[DrainLabel("r")] != "" }, "the dispatcher saw the drain")
	eventually(t, func() bool {
		if ge.dispatcher.Admit(keyX) {
			ge.dispatcher.Release(keyX)
			t.Error("a draining key was admitted")
		}
		return ge.stored(t, "x").Labels[Label("r")] == "" && ge.cached("x") == nil
	}, "acknowledged and gone from the cache")
	assert.False(t, ge.dispatcher.Admit(keyX))
	ge.w.mu.Lock()
	defer ge.w.mu.Unlock()
	assert.GreaterOrEqual(t, ge.w.calls, 2, "the Conflict was retried")
}

// A newly assigned owner is held back until the child informer has
// delivered the children barrier, then enqueued.
func TestDispatcherWaitsForTheChildrenBarrier(t *testing.T) {
	ge := newDispatcherEnv(t, clock.RealClock{})
	ctx := context.Background()
	s, err := ge.env.Client().CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	rv, err := strconv.ParseUint(s.ResourceVersion, 10, 64)
	require.NoError(t, err)
	barrierRV := rv + 3 // two writes after the owner's create
	_, err = ge.env.Client().CoreV1().ConfigMaps("default").Create(ctx, configMap("x", map[string]string{Label("r"): "m"},
		map[string]string{barrierAnnotation("r"): "secrets=" + strconv.FormatUint(barrierRV, 10) + ",pods=1"}), metav1.CreateOptions{})
	require.NoError(t, err)
	eventually(t, func() bool { return ge.cached("x") != nil }, "x cached")
	assert.False(t, ge.dispatcher.Admit(keyX), "held back by the barrier")

	for _, n := range []string{"c1", "c2"} {
		_, err := ge.env.Client().CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
			Name: n, Labels: map[string]string{Label("r"): "m"}}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	ge.awaitEnqueued(t, keyX, "the key was not enqueued when the barrier passed")
	require.True(t, ge.dispatcher.Admit(keyX))
	ge.dispatcher.Release(keyX)
	assert.Equal(t, 0.0, testutil.ToFloat64(ge.metrics.barrierTimeouts.WithLabelValues("r", "m")))
}

// A barrier that is never delivered (its child was deleted before this
// member started watching) holds the key back for BarrierTimeout only.
func TestDispatcherBarrierTimesOut(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	ge := newDispatcherEnv(t, clk, configMap("x", map[string]string{Label("r"): "m"}, map[string]string{barrierAnnotation("r"): "secrets=999999999"}))
	eventually(t, func() bool { return ge.cached("x") != nil }, "x cached")
	assert.False(t, ge.dispatcher.Admit(keyX))
	// The ticker may start after a step; step until it has fired past the
	// time-out.
	eventually(t, func() bool {
		select {
		case k := <-ge.enqueued:
			assert.Equal(t, keyX, k)
			return true
		default:
			clk.Step(100 * time.Millisecond)
			return false
		}
	}, "the key is enqueued once the barrier timed out")
	require.True(t, ge.dispatcher.Admit(keyX))
	ge.dispatcher.Release(keyX)
	assert.Equal(t, 1.0, testutil.ToFloat64(ge.metrics.barrierTimeouts.WithLabelValues("r", "m")))
}

// Keys whose object is not this member's are refused; a deletion (not a
// handover) is admitted; the owned-keys gauge follows the cache.
func TestDispatcherAdmitsDeletionsAndCountsKeys(t *testing.T) {
	ge := newDispatcherEnv(t, clock.RealClock{}, configMap("x", map[string]string{Label("r"): "m"}, nil), configMap("y", map[string]string{Label("r"): "m"}, nil))
	eventually(t, func() bool { return testutil.ToFloat64(ge.metrics.keysOwned.WithLabelValues("r", "m")) == 2 }, "two keys owned")
	require.NoError(t, ge.env.Client().CoreV1().ConfigMaps("default").Delete(context.Background(), "x", metav1.DeleteOptions{}))
	eventually(t, func() bool { return ge.cached("x") == nil }, "x deleted")
	// The controller's handler of the deletion may run before the dispatcher's: a
	// key refused then is enqueued again once the dispatcher has seen the deletion.
	if !ge.dispatcher.Admit(keyX) {
		ge.awaitEnqueued(t, keyX, "a deletion refused before the dispatcher saw it was not enqueued again")
		require.True(t, ge.dispatcher.Admit(keyX), "a deleted owner is reconciled as usual")
	}
	ge.dispatcher.Release(keyX)
	eventually(t, func() bool { return testutil.ToFloat64(ge.metrics.keysOwned.WithLabelValues("r", "m")) == 1 }, "one key owned")
}

// A key the dispatcher does not cache and did not see deleted here is refused
// (a handed-over key, or one whose owner is not here yet); when the dispatcher
// then sees the owner deleted while assigned here, it enqueues the key
// again, and admits it.
func TestDispatcherRefusesUnknownKeysUntilItSeesThemDeleted(t *testing.T) {
	ge := newDispatcherEnv(t, clock.RealClock{}, configMap("y", map[string]string{Label("r"): "m"}, nil))
	eventually(t, func() bool { return testutil.ToFloat64(ge.metrics.keysOwned.WithLabelValues("r", "m")) == 1 }, "the dispatcher's handlers run")
	assert.False(t, ge.dispatcher.Admit(keyX), "never cached, never deleted")
	// The owner handler, as the informer calls it (tombstones unwrapped).
	owners := ownerHandler[controller.Key, *corev1.ConfigMap]{ge.dispatcher}
	owners.HandleDelete(configMap("x", map[string]string{Label("r"): "other"}, nil), informer.DeleteInfo{Key: "default/x"})
	assert.False(t, ge.dispatcher.Admit(keyX), "deleted while assigned elsewhere")
	owners.HandleDelete(configMap("x", map[string]string{Label("r"): "m", DrainLabel("r"): "true"}, nil), informer.DeleteInfo{Key: "default/x"})
	assert.False(t, ge.dispatcher.Admit(keyX), "left the cache draining: a handover")
	assert.Empty(t, ge.enqueued)
	owners.HandleDelete(configMap("x", map[string]string{Label("r"): "m"}, nil), informer.DeleteInfo{Key: "default/x", FinalStateUnknown: true})
	select {
	case k := <-ge.enqueued:
		assert.Equal(t, keyX, k, "the refused key is enqueued again")
	default:
		t.Fatal("the refused key was not enqueued again")
	}
	require.True(t, ge.dispatcher.Admit(keyX), "a deletion seen here is admitted")
	ge.dispatcher.Release(keyX)
}

// A dispatcher that never runs (a member stopped before it joined) starts no
// goroutine.
func TestDispatcherThatNeverRunsStartsNothing(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	cfg := Config{Ring: "r", Identity: "m"}.WithDefaults()
	for range 3 {
		newDispatcher[controller.Key, *corev1.ConfigMap](cfg, testHolder, nil, func(controller.Key) {}, nil, DispatcherOptions{})
	}
}

// stateSize counts the dispatcher's per-key entries of each kind.
func (d *labelDispatcher[K]) stateSize() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return map[string]int{"pendingAcks": len(d.pendingAcks), "inFlight": len(d.inFlight), "acking": len(d.acking),
		"afterAck": len(d.afterAck), "acked": len(d.acked), "deleted": len(d.deleted), "refused": len(d.refused), "waiting": len(d.waiting)}
}

// The dispatcher's per-key state does not grow with churn: round after round of
// keys created here, handed over (with a stale enqueue after they left) and
// deleted, it holds nothing once LeaseDuration has passed, and still
// refuses the keys it handed over.
func TestDispatcherStateDoesNotGrowWithChurn(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	ge := newDispatcherEnv(t, clk)
	empty := map[string]int{"pendingAcks": 0, "inFlight": 0, "acking": 0, "afterAck": 0, "acked": 0, "deleted": 0, "refused": 0, "waiting": 0}
	ctx := context.Background()
	cms := ge.env.Client().CoreV1().ConfigMaps("default")
	for round := range 3 {
		const n = 20
		key := func(i int) controller.Key {
			return controller.Key{Namespace: "default", Name: fmt.Sprintf("k%d-%d", round, i)}
		}
		for i := range n {
			_, err := cms.Create(ctx, configMap(key(i).Name, map[string]string{Label("r"): "m"}, nil), metav1.CreateOptions{})
			require.NoError(t, err)
		}
		eventually(t, func() bool { return testutil.ToFloat64(ge.metrics.keysOwned.WithLabelValues("r", "m")) == n }, "all cached")
		for i := range n {
			require.True(t, ge.dispatcher.Admit(key(i)))
			ge.dispatcher.Release(key(i))
		}
		// Half are handed over, half deleted.
		for i := range n / 2 {
			ge.label(t, key(i).Name, map[string]*string{DrainLabel("r"): ptr("true")})
			require.NoError(t, cms.Delete(ctx, key(n/2+i).Name, metav1.DeleteOptions{}))
		}
		eventually(t, func() bool {
			return testutil.ToFloat64(ge.metrics.keysOwned.WithLabelValues("r", "m")) == 0 && ge.dispatcher.stateSize()["acking"] == 0
		}, "all gone from the cache, every acknowledgement returned")
		for i := range n {
			admitted := ge.dispatcher.Admit(key(i))
			if admitted {
				ge.dispatcher.Release(key(i))
			}
			assert.Equal(t, i >= n/2, admitted, "handed over keys are refused, deleted ones admitted: %s", key(i))
		}
		size := ge.dispatcher.stateSize()
		assert.Equal(t, n/2, size["deleted"], "recent deletions")
		assert.Equal(t, n/2, size["refused"], "recent refusals")
		clk.Step(2 * time.Second) // the ring's LeaseDuration
		ge.dispatcher.releaseWaiting()
		assert.Equal(t, empty, ge.dispatcher.stateSize(), "round %d", round)
		for i := range n / 2 {
			assert.False(t, ge.dispatcher.Admit(key(i)), "still refused once forgotten: %s", key(i))
		}
		ge.dispatcher.releaseWaiting()
		clk.Step(2 * time.Second)
		ge.dispatcher.releaseWaiting()
	}
	assert.Equal(t, empty, ge.dispatcher.stateSize())
}

// An object labelled for this member but stamped for another process of
// its identity (an earlier one, whose keys the sharder has not assigned
// again yet) is not this process's: refused, its drain not acknowledged,
// and admitted once the sharder stamps it for this process.
func TestDispatcherRefusesKeysStampedForAnotherProcess(t *testing.T) {
	other := map[string]string{HolderAnnotation("r"): "m_former"}
	ge := newDispatcherEnv(t, clock.RealClock{}, configMap("x", map[string]string{Label("r"): "m", DrainLabel("r"): "true"}, other))
	eventually(t, func() bool { return ge.cached("x") != nil }, "x cached")
	assert.False(t, ge.dispatcher.Admit(keyX), "stamped for another process")
	ge.label(t, "x", map[string]*string{DrainLabel("r"): nil})
	eventually(t, func() bool { return ge.cached("x").Labels[DrainLabel("r")] == "" }, "drain label gone")
	assert.False(t, ge.dispatcher.Admit(keyX), "stamped for another process")
	assert.Equal(t, "m", ge.stored(t, "x").Labels[Label("r")], "its drain was not acknowledged")
	assert.Empty(t, ge.log.all(), "no acknowledgement written")
	ge.label(t, "x", map[string]*string{Label("r"): ptr("m")}) // stamps it for testHolder
	eventually(t, func() bool { return ge.cached("x").Annotations[HolderAnnotation("r")] == testHolder }, "stamped for this process")
	require.True(t, ge.dispatcher.Admit(keyX))
	ge.dispatcher.Release(keyX)
}
