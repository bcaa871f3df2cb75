package controller

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	kworkqueue "k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/provenance"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// reasonsLog collects the ReasonsFrom of every Reconcile.
type reasonsLog struct {
	mu  sync.Mutex
	got []provenance.Reasons
}

func (l *reasonsLog) add(ctx context.Context) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, ReasonsFrom(ctx))
	return len(l.got)
}

func (l *reasonsLog) all() []provenance.Reasons {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]provenance.Reasons(nil), l.got...)
}

// The error policy names its requeues: a failed call comes back as retry #1, a RequeueAfter as
// requeueAfter with its delay, a Requeue as requeue; an Enqueue before Run as manual.
func TestProvenanceOfRequeues(t *testing.T) {
	ctx, logs := testLogger(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var rec reasonsLog
	c, err := New("prov", ReconcilerFunc[string](func(ctx context.Context, _ string) (Result, error) {
		switch rec.add(ctx) {
		case 1:
			return Result{}, errors.New("boom")
		case 2:
			return Result{RequeueAfter: time.Millisecond}, nil
		case 3:
			return Result{Requeue: true}, nil
		}
		return Result{}, nil
	}), Options[string]{
		Provenance:  &Provenance{},
		RateLimiter: kworkqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, time.Millisecond),
	})
	require.NoError(t, err)
	c.Enqueue("k")
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	require.Eventually(t, func() bool { return len(rec.all()) == 4 }, 10*time.Second, time.Millisecond)
	cancel()
	require.NoError(t, <-done)

	got := rec.all()
	kinds := []provenance.TriggerKind{provenance.TriggerManual, provenance.TriggerRetry, provenance.TriggerRequeueAfter, provenance.TriggerRequeue}
	for i, want := range kinds {
		assert.Equal(t, 1, got[i].Total, "call %d: %v", i+1, got[i])
		assert.Equal(t, want, got[i].First.Kind, "call %d: %v", i+1, got[i])
	}
	assert.Equal(t, 1, got[1].First.Retry, "the first retry is retry #1")
	assert.Equal(t, time.Millisecond, got[2].First.After)

	var lines int
	for _, e := range logged(logs) {
		if e.Message == "Reconciling" {
			lines++
			assert.Equal(t, 2, e.Verbosity, "the reasons line is at the default level")
			assert.Contains(t, e.ParameterKVList, "reasons")
		}
	}
	assert.Equal(t, 4, lines, "one Reconciling line per call")
}

// Watch records the informer, the event type and the object of each event: an initial add,
// then an update of the object.
func TestProvenanceOfWatchEvents(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", ResourceVersion: "1"}}
	client := fake.NewClientset(rs)
	f := informer.NewFactory(client, informer.Options{})
	rss, err := informer.For[*appsv1.ReplicaSet](f)
	require.NoError(t, err)
	var rec reasonsLog
	c, err := New("prov", ReconcilerFunc[Key](func(ctx context.Context, _ Key) (Result, error) {
		rec.add(ctx)
		return Result{}, nil
	}), Options[Key]{Provenance: &Provenance{LogLevel: -1}})
	require.NoError(t, err)
	require.NoError(t, Watch(c, rss, EnqueueObject))
	f.Start(ctx)
	defer f.Shutdown()
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	require.Eventually(t, func() bool { return len(rec.all()) == 1 }, 10*time.Second, time.Millisecond)

	upd := rs.DeepCopy()
	upd.ResourceVersion = "2"
	_, err = client.AppsV1().ReplicaSets("ns").Update(ctx, upd, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(rec.all()) == 2 }, 10*time.Second, time.Millisecond)
	cancel()
	require.NoError(t, <-done)

	got := rec.all()
	assert.Equal(t, provenance.Trigger{Kind: provenance.TriggerEvent, Event: provenance.EventAdd, Source: "replicasets.apps", Namespace: "ns", Name: "web"}, got[0].First)
	assert.Equal(t, provenance.Trigger{Kind: provenance.TriggerEvent, Event: provenance.EventUpdate, Source: "replicasets.apps", Namespace: "ns", Name: "web"}, got[1].Last)
}

// Without provenance ReasonsFrom is zero; a prebuilt queue that keeps no reasons is refused.
func TestProvenanceOffAndBadQueue(t *testing.T) {
	assert.True(t, ReasonsFrom(context.Background()).IsZero())
	cq := kworkqueue.NewTypedRateLimitingQueue(kworkqueue.DefaultTypedControllerRateLimiter[string]())
	defer cq.ShutDown()
	_, err := New("prov", ReconcilerFunc[string](func(context.Context, string) (Result, error) { return Result{}, nil }), Options[string]{
		Provenance: &Provenance{},
		Queue:      cq,
	})
	var oe *OptionsError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "Provenance", oe.Field)
	assert.ErrorIs(t, err, ErrInvalidOptions)

	q := workqueue.New(workqueue.WithProvenance[string]())
	c, err := New("prov", ReconcilerFunc[string](func(context.Context, string) (Result, error) { return Result{}, nil }), Options[string]{
		Provenance: &Provenance{}, Queue: q,
	})
	require.NoError(t, err, "a ctrlkit queue keeps reasons")
	assert.NotNil(t, c)
	q.ShutDown()
}

// EnqueueWithTrigger names the event of a hand-written handler.
func TestEnqueueWithTrigger(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var rec reasonsLog
	c, err := New("prov", ReconcilerFunc[Key](func(ctx context.Context, _ Key) (Result, error) {
		rec.add(ctx)
		return Result{}, nil
	}), Options[Key]{Provenance: &Provenance{LogLevel: -1}})
	require.NoError(t, err)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
	c.EnqueueWithTrigger(KeyFromObject(rs), provenance.EventTrigger("replicasets.apps", provenance.EventDelete, rs))
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	require.Eventually(t, func() bool { return len(rec.all()) == 1 }, 10*time.Second, time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	assert.Equal(t, "1 trigger: event:delete replicasets.apps ns/web", rec.all()[0].String())
}

// A Watch's event handler with provenance allocates nothing per event: the trigger's strings
// are the cached object's, and the record lives in the queue's recycled entry.
func TestTracedHandlerAllocations(t *testing.T) {
	q := workqueue.New(workqueue.WithProvenance[Key]())
	defer q.ShutDown()
	keys := []Key{{Namespace: "ns", Name: "a"}}
	h := enqueueMapped(adaptQueue(q, true), func(*appsv1.ReplicaSet) []Key { return keys }, "replicasets.apps", true)
	oldRS := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "1"}}
	newRS := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "2"}}
	cycle := func() {
		h.HandleAdd(newRS, false)
		h.HandleUpdate(oldRS, newRS)
		h.HandleDelete(newRS, informer.DeleteInfo{Key: "ns/a"})
		k, why, _ := getWithReasons(q)
		q.Done(k)
		if why.Total != 3 {
			t.Fatalf("reasons %v", why)
		}
	}
	cycle()
	assert.Zero(t, testing.AllocsPerRun(1000, cycle))
}

func podUpdate(name string) provenance.Trigger {
	return provenance.Trigger{Kind: provenance.TriggerEvent, Event: provenance.EventUpdate, Source: "pods", Namespace: "ns", Name: name}
}

// addCause adds key to q for the reason t, as the controller's queue does.
func addCause(q *workqueue.Queue[string], key string, t provenance.Trigger) {
	q.AddWithOpts(workqueue.AddOpts{After: t.After, Cause: t.Cause()}, key)
}

// Triggers merged by the queue come back as the same provenance.Reasons, in the String form logs show.
func TestReasonsThroughTheQueue(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	q := workqueue.New(workqueue.WithProvenance[string](), workqueue.WithClock[string](clk))
	defer q.ShutDown()
	addCause(q, "k", podUpdate("a"))
	addCause(q, "k", podUpdate("b"))
	addCause(q, "k", provenance.Trigger{Kind: provenance.TriggerManual})
	q.Add("k") // names no trigger
	k, why, down := getWithReasons(q)
	require.False(t, down)
	require.Equal(t, "k", k)
	assert.Equal(t, 4, why.Total)
	assert.Equal(t, 2, why.Count(provenance.TriggerEvent))
	assert.Equal(t, 1, why.Count(provenance.TriggerManual))
	assert.Equal(t, 1, why.Count(provenance.TriggerUnspecified))
	assert.Equal(t, podUpdate("a"), why.First)
	assert.Equal(t, provenance.Trigger{}, why.Last)
	assert.Equal(t, "4 triggers (unspecified=1 event=2 manual=1); first: event:update pods ns/a; last: unspecified", why.String())

	// A delayed trigger joins when its delay ends; DoneAndTryGet hands it out too.
	after := provenance.Trigger{Kind: provenance.TriggerRequeueAfter, After: time.Minute}
	addCause(q, "k", after)
	clk.Step(time.Minute)
	k, why, ok := doneAndTryGetWithReasons(q, k)
	require.True(t, ok)
	assert.Equal(t, after, why.First)
	assert.Equal(t, "1 trigger: requeueAfter after 1m0s", why.String())
	_, why, ok = doneAndTryGetWithReasons(q, k)
	assert.False(t, ok)
	assert.True(t, why.IsZero())

	// A queue without provenance hands out zero provenance.Reasons.
	off := workqueue.New[string]()
	defer off.ShutDown()
	addCause(off, "k", podUpdate("a"))
	_, why, _ = getWithReasons(off)
	assert.True(t, why.IsZero())
	assert.Equal(t, "none", why.String())
}
