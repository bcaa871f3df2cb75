package controller

import (
	"context"
	"errors"
	"strconv"
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
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// reasonsLog collects the ReasonsFrom of every Reconcile.
type reasonsLog struct {
	mu  sync.Mutex
	got []Reasons
}

func (l *reasonsLog) add(ctx context.Context) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, ReasonsFrom(ctx))
	return len(l.got)
}

func (l *reasonsLog) all() []Reasons {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Reasons(nil), l.got...)
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
	kinds := []TriggerKind{TriggerManual, TriggerRetry, TriggerRequeueAfter, TriggerRequeue}
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
	assert.Equal(t, Trigger{Kind: TriggerEvent, Event: EventAdd, Source: "replicasets.apps", Namespace: "ns", Name: "web"}, got[0].First)
	assert.Equal(t, Trigger{Kind: TriggerEvent, Event: EventUpdate, Source: "replicasets.apps", Namespace: "ns", Name: "web"}, got[1].Last)
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
	c.EnqueueWithTrigger(KeyFromObject(rs), EventTrigger("replicasets.apps", EventDelete, rs))
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

func podUpdate(name string) Trigger {
	return Trigger{Kind: TriggerEvent, Event: EventUpdate, Source: "pods", Namespace: "ns", Name: name}
}

// addCause adds key to q for the reason t, as the controller's queue does.
func addCause(q *workqueue.Queue[string], key string, t Trigger) {
	q.AddWithOpts(workqueue.AddOpts{After: t.After, Cause: t.cause()}, key)
}

// Triggers merged by the queue come back as the same Reasons, in the String form logs show.
func TestReasonsThroughTheQueue(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	q := workqueue.New(workqueue.WithProvenance[string](), workqueue.WithClock[string](clk))
	defer q.ShutDown()
	addCause(q, "k", podUpdate("a"))
	addCause(q, "k", podUpdate("b"))
	addCause(q, "k", Trigger{Kind: TriggerManual})
	q.Add("k") // names no trigger
	k, why, down := getWithReasons(q)
	require.False(t, down)
	require.Equal(t, "k", k)
	assert.Equal(t, 4, why.Total)
	assert.Equal(t, 2, why.Count(TriggerEvent))
	assert.Equal(t, 1, why.Count(TriggerManual))
	assert.Equal(t, 1, why.Count(TriggerUnspecified))
	assert.Equal(t, podUpdate("a"), why.First)
	assert.Equal(t, Trigger{}, why.Last)
	assert.Equal(t, "4 triggers (unspecified=1 event=2 manual=1); first: event:update pods ns/a; last: unspecified", why.String())

	// A delayed trigger joins when its delay ends; DoneAndTryGet hands it out too.
	after := Trigger{Kind: TriggerRequeueAfter, After: time.Minute}
	addCause(q, "k", after)
	clk.Step(time.Minute)
	k, why, ok := doneAndTryGetWithReasons(q, k)
	require.True(t, ok)
	assert.Equal(t, after, why.First)
	assert.Equal(t, "1 trigger: requeueAfter after 1m0s", why.String())
	_, why, ok = doneAndTryGetWithReasons(q, k)
	assert.False(t, ok)
	assert.True(t, why.IsZero())

	// A queue without provenance hands out zero Reasons.
	off := workqueue.New[string]()
	defer off.ShutDown()
	addCause(off, "k", podUpdate("a"))
	_, why, _ = getWithReasons(off)
	assert.True(t, why.IsZero())
	assert.Equal(t, "none", why.String())
}

// Every field of a trigger survives the queue, and the queue's record converts to the Reasons
// that recording the same triggers gives, kinds the controller does not count included.
func TestReasonsConversion(t *testing.T) {
	full := Trigger{Kind: TriggerRetry, Event: EventDelete, Source: "s", Namespace: "ns", Name: "n", Retry: 3, After: time.Second}
	c := full.cause()
	assert.Equal(t, full, triggerOf(&c))

	ts := []Trigger{podUpdate("a"), full, {Kind: numTriggerKinds, Name: "past the last kind"}, {Kind: 200}, {Kind: TriggerFence, Source: "timeout"}}
	var rec workqueue.Record
	var want Reasons
	for _, tr := range ts {
		rec.Add(tr.cause())
		want.Record(tr)
	}
	assert.Equal(t, want, reasonsOf(&rec))
	assert.Equal(t, Reasons{}, reasonsOf(&workqueue.Record{}))
}

// The String forms of triggers, kinds and event types.
func TestTriggerStrings(t *testing.T) {
	for tr, want := range map[Trigger]string{
		{Kind: TriggerRetry, Retry: 2}: "retry#2",
		podUpdate("web-1"):             "event:update pods ns/web-1",
		{Kind: TriggerResync, Event: EventUpdate, Source: "pods", Name: "node-1"}: "resync:update pods node-1",
		{Kind: TriggerFence, Source: "timeout"}:                                   "fence timeout",
		{Kind: TriggerRetry, Retry: 16, After: 5 * time.Minute}:                   "retry#16 after 5m0s",
		{}: "unspecified",
	} {
		assert.Equal(t, want, tr.String())
	}
	assert.Equal(t, "TriggerKind(200)", TriggerKind(200).String())
	assert.Equal(t, "EventType(9)", EventType(9).String())
	assert.Equal(t, "", EventNone.String())
	assert.Equal(t, "add", EventAdd.String())
	assert.Equal(t, "delete", EventDelete.String())
}

// The record of a key stays the same size whatever the number of its triggers.
func TestReasonsRecordIsBounded(t *testing.T) {
	var r Reasons
	for i := range 10000 {
		r.Record(podUpdate(strconv.Itoa(i)))
	}
	var o Reasons
	o.Record(Trigger{Kind: TriggerResync, Event: EventUpdate})
	r.Merge(o)
	if r.Total != 10001 || r.Count(TriggerEvent) != 10000 || r.Count(TriggerResync) != 1 ||
		r.First.Name != "0" || r.Last.Kind != TriggerResync {
		t.Fatalf("merged record: %v", r)
	}
	if r.Count(TriggerKind(200)) != 0 || TriggerKind(200).String() != "TriggerKind(200)" {
		t.Fatal("an unknown kind must count zero and print its number")
	}
	assert.Equal(t, "10001 triggers (event=10000 resync=1); first: event:update pods ns/0; last: resync:update", r.String())
	assert.Equal(t, r.String(), r.MarshalLog())
}
