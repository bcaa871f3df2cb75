package workqueue_test

import (
	"strconv"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/workqueue"
)

func event(name string) workqueue.Trigger {
	return workqueue.Trigger{Kind: workqueue.TriggerEvent, Event: workqueue.EventUpdate, Source: "pods", Namespace: "ns", Name: name}
}

func TestProvenanceMergesOnDedup(t *testing.T) {
	q := workqueue.New(workqueue.WithProvenance[string]())
	defer q.ShutDown()
	q.AddWithOpts(workqueue.AddOpts{Trigger: event("a")}, "k")
	q.AddWithOpts(workqueue.AddOpts{Trigger: event("b")}, "k")
	q.AddWithOpts(workqueue.AddOpts{Trigger: workqueue.Trigger{Kind: workqueue.TriggerManual}}, "k")
	q.Add("k")

	item, why, down := q.GetWithReasons()
	if down || item != "k" {
		t.Fatalf("GetWithReasons = %q, %v", item, down)
	}
	if why.Total != 4 || why.Count(workqueue.TriggerEvent) != 2 || why.Count(workqueue.TriggerManual) != 1 ||
		why.Count(workqueue.TriggerUnspecified) != 1 {
		t.Fatalf("counts wrong: %v", why)
	}
	if why.First != event("a") || why.Last.Kind != workqueue.TriggerUnspecified {
		t.Fatalf("first/last wrong: %+v / %+v", why.First, why.Last)
	}
	const want = "4 triggers (unspecified=1 event=2 manual=1); first: event:update pods ns/a; last: unspecified"
	if got := why.String(); got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}

	// Added while processing: the new trigger is for the next hand-out only.
	q.AddWithOpts(workqueue.AddOpts{Trigger: event("c")}, "k")
	q.Done("k")
	_, why, _ = q.GetWithReasons()
	if why.Total != 1 || why.First != event("c") {
		t.Fatalf("second hand-out: %v", why)
	}
	q.Done("k")
	if q.Len() != 0 {
		t.Fatalf("Len = %d after Done", q.Len())
	}
}

func TestProvenanceDelayedTriggerJoinsWhenDue(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	q := workqueue.New(workqueue.WithProvenance[string](), workqueue.WithClock[string](clk))
	defer q.ShutDown()
	after := workqueue.Trigger{Kind: workqueue.TriggerRequeueAfter, After: time.Minute}
	q.AddWithOpts(workqueue.AddOpts{After: time.Minute, Trigger: after}, "k")
	q.AddWithOpts(workqueue.AddOpts{Trigger: event("a")}, "k")

	_, why, _ := q.GetWithReasons()
	if why.Total != 1 || why.First != event("a") {
		t.Fatalf("before the delay ends the record holds only the event: %v", why)
	}
	q.Done("k")
	clk.Step(time.Minute)
	_, why, _ = q.GetWithReasons()
	if why.Total != 1 || why.First != after {
		t.Fatalf("after the delay: %v", why)
	}
	if got := why.String(); got != "1 trigger: requeueAfter after 1m0s" {
		t.Fatalf("String() = %q", got)
	}
	q.Done("k")
}

func TestProvenanceHandedToWaitingGetter(t *testing.T) {
	q := workqueue.New(workqueue.WithProvenance[string]())
	defer q.ShutDown()
	got := make(chan workqueue.Reasons, 1)
	go func() {
		_, why, _ := q.GetWithReasons()
		got <- why
	}()
	// The getter may or may not be waiting yet: both paths must carry the record.
	q.AddWithOpts(workqueue.AddOpts{Trigger: workqueue.Trigger{Kind: workqueue.TriggerRetry, Retry: 2}}, "k")
	why := <-got
	if why.Total != 1 || why.First.Kind != workqueue.TriggerRetry || why.First.String() != "retry#2" {
		t.Fatalf("waiting getter got %v", why)
	}
}

func TestProvenanceRecycledEntryStartsClean(t *testing.T) {
	q := workqueue.New(workqueue.WithProvenance[string]())
	defer q.ShutDown()
	for i := range 3 {
		q.AddWithOpts(workqueue.AddOpts{Trigger: event(strconv.Itoa(i))}, "k"+strconv.Itoa(i))
		_, why, _ := q.GetWithReasons()
		q.Done("k" + strconv.Itoa(i))
		if why.Total != 1 || why.First.Name != strconv.Itoa(i) {
			t.Fatalf("round %d: %v", i, why)
		}
	}
}

func TestProvenanceOffHandsOutZero(t *testing.T) {
	q := workqueue.New[string]()
	defer q.ShutDown()
	q.AddWithOpts(workqueue.AddOpts{Trigger: event("a")}, "k")
	_, why, _ := q.GetWithReasons()
	if !why.IsZero() || why.String() != "none" {
		t.Fatalf("a queue without provenance recorded %v", why)
	}
	q.Done("k")
}

func TestProvenanceRecordIsBounded(t *testing.T) {
	var r workqueue.Reasons
	for i := range 10000 {
		r.Record(event(strconv.Itoa(i)))
	}
	var o workqueue.Reasons
	o.Record(workqueue.Trigger{Kind: workqueue.TriggerResync, Event: workqueue.EventUpdate})
	r.Merge(o)
	if r.Total != 10001 || r.Count(workqueue.TriggerEvent) != 10000 || r.Count(workqueue.TriggerResync) != 1 ||
		r.First.Name != "0" || r.Last.Kind != workqueue.TriggerResync {
		t.Fatalf("merged record: %v", r)
	}
	if r.Count(workqueue.TriggerKind(200)) != 0 || workqueue.TriggerKind(200).String() != "TriggerKind(200)" {
		t.Fatal("an unknown kind must count zero and print its number")
	}
}
