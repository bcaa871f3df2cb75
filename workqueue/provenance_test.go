package workqueue_test

import (
	"strconv"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/workqueue"
)

// The kinds these tests give their causes. The queue attaches no meaning to them; kind 0 is
// the zero Cause that Add records.
const (
	kindNone   uint8 = 0
	kindEvent  uint8 = 1
	kindDelay  uint8 = 2
	kindRetry  uint8 = 3
	kindManual uint8 = 4
)

func event(name string) workqueue.Cause {
	return workqueue.Cause{Kind: kindEvent, Detail: 2, Source: "pods", Namespace: "ns", Name: name}
}

func TestProvenanceMergesOnDedup(t *testing.T) {
	q := workqueue.New(workqueue.WithProvenance[string]())
	defer q.ShutDown()
	q.AddWithOpts(workqueue.AddOpts{Cause: event("a")}, "k")
	q.AddWithOpts(workqueue.AddOpts{Cause: event("b")}, "k")
	q.AddWithOpts(workqueue.AddOpts{Cause: workqueue.Cause{Kind: kindManual}}, "k")
	q.Add("k")

	item, rec, down := q.GetWithRecord()
	if down || item != "k" {
		t.Fatalf("GetWithRecord = %q, %v", item, down)
	}
	if rec.Total != 4 || rec.Count(kindEvent) != 2 || rec.Count(kindManual) != 1 || rec.Count(kindNone) != 1 {
		t.Fatalf("counts wrong: %+v", rec)
	}
	if rec.First != event("a") || rec.Last != (workqueue.Cause{}) {
		t.Fatalf("first/last wrong: %+v / %+v", rec.First, rec.Last)
	}

	// Added while processing: the new cause is for the next hand-out only.
	q.AddWithOpts(workqueue.AddOpts{Cause: event("c")}, "k")
	q.Done("k")
	_, rec, _ = q.GetWithRecord()
	if rec.Total != 1 || rec.First != event("c") || rec.Last != event("c") {
		t.Fatalf("second hand-out: %+v", rec)
	}
	q.Done("k")
	if q.Len() != 0 {
		t.Fatalf("Len = %d after Done", q.Len())
	}
}

func TestProvenanceDelayedCauseJoinsWhenDue(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	q := workqueue.New(workqueue.WithProvenance[string](), workqueue.WithClock[string](clk))
	defer q.ShutDown()
	after := workqueue.Cause{Kind: kindDelay, After: time.Minute}
	q.AddWithOpts(workqueue.AddOpts{After: time.Minute, Cause: after}, "k")
	q.AddWithOpts(workqueue.AddOpts{Cause: event("a")}, "k")

	_, rec, _ := q.GetWithRecord()
	if rec.Total != 1 || rec.First != event("a") {
		t.Fatalf("before the delay ends the record holds only the event: %+v", rec)
	}
	q.Done("k")
	clk.Step(time.Minute)
	_, rec, _ = q.GetWithRecord()
	if rec.Total != 1 || rec.First != after || rec.Count(kindDelay) != 1 {
		t.Fatalf("after the delay: %+v", rec)
	}
	q.Done("k")
}

func TestProvenanceHandedToWaitingGetter(t *testing.T) {
	q := workqueue.New(workqueue.WithProvenance[string]())
	defer q.ShutDown()
	got := make(chan workqueue.Record, 1)
	go func() {
		_, rec, _ := q.GetWithRecord()
		got <- rec
	}()
	// The getter may or may not be waiting yet: both paths must carry the record.
	q.AddWithOpts(workqueue.AddOpts{Cause: workqueue.Cause{Kind: kindRetry, N: 2}}, "k")
	rec := <-got
	if rec.Total != 1 || rec.First != (workqueue.Cause{Kind: kindRetry, N: 2}) {
		t.Fatalf("waiting getter got %+v", rec)
	}
}

func TestProvenanceDoneAndTryGetWithRecord(t *testing.T) {
	q := workqueue.New(workqueue.WithProvenance[string]())
	defer q.ShutDown()
	q.AddWithOpts(workqueue.AddOpts{Cause: event("a")}, "a")
	q.AddWithOpts(workqueue.AddOpts{Cause: event("b")}, "b")
	k, rec, _ := q.GetWithRecord()
	if k != "a" || rec.First != event("a") {
		t.Fatalf("GetWithRecord = %q, %+v", k, rec)
	}
	k, rec, ok := q.DoneAndTryGetWithRecord(k)
	if !ok || k != "b" || rec.Total != 1 || rec.First != event("b") {
		t.Fatalf("DoneAndTryGetWithRecord = %q, %+v, %v", k, rec, ok)
	}
	if _, rec, ok = q.DoneAndTryGetWithRecord(k); ok || !rec.IsZero() {
		t.Fatalf("nothing is ready, yet DoneAndTryGetWithRecord = %+v, %v", rec, ok)
	}
}

func TestProvenanceRecycledEntryStartsClean(t *testing.T) {
	q := workqueue.New(workqueue.WithProvenance[string]())
	defer q.ShutDown()
	for i := range 3 {
		q.AddWithOpts(workqueue.AddOpts{Cause: event(strconv.Itoa(i))}, "k"+strconv.Itoa(i))
		_, rec, _ := q.GetWithRecord()
		q.Done("k" + strconv.Itoa(i))
		if rec.Total != 1 || rec.First.Name != strconv.Itoa(i) {
			t.Fatalf("round %d: %+v", i, rec)
		}
	}
}

func TestProvenanceOffHandsOutZero(t *testing.T) {
	q := workqueue.New[string]()
	defer q.ShutDown()
	q.AddWithOpts(workqueue.AddOpts{Cause: event("a")}, "k")
	_, rec, _ := q.GetWithRecord()
	if !rec.IsZero() || rec != (workqueue.Record{}) {
		t.Fatalf("a queue without provenance recorded %+v", rec)
	}
	q.Done("k")
}

func TestProvenanceRecordIsBounded(t *testing.T) {
	var r workqueue.Record
	for i := range 10000 {
		r.Add(event(strconv.Itoa(i)))
	}
	var o workqueue.Record
	o.Add(workqueue.Cause{Kind: workqueue.CauseKinds - 1, Detail: 2})
	r.Merge(o)
	if r.Total != 10001 || r.Count(kindEvent) != 10000 || r.Count(workqueue.CauseKinds-1) != 1 ||
		r.First.Name != "0" || r.Last.Kind != workqueue.CauseKinds-1 {
		t.Fatalf("merged record: %+v", r)
	}
	// A kind the record does not count is still recorded.
	r.Add(workqueue.Cause{Kind: 200})
	if r.Count(200) != 0 || r.Count(workqueue.CauseKinds) != 0 || r.Total != 10002 || r.Last.Kind != 200 {
		t.Fatalf("an uncounted kind must count zero and still be recorded: %+v", r)
	}
	// Merging into a zero record, or merging a zero record, changes nothing but the zero one.
	var z workqueue.Record
	z.Merge(o)
	o.Merge(workqueue.Record{})
	if z != o || z.Total != 1 {
		t.Fatalf("merge with a zero record: %+v / %+v", z, o)
	}
}
