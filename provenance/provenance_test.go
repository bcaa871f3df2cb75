package provenance

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/ctrlkit/ctrlkit/workqueue"
)

func podUpdate(name string) Trigger {
	return Trigger{Kind: TriggerEvent, Event: EventUpdate, Source: "pods", Namespace: "ns", Name: name}
}

// Every field of a trigger survives the queue, and the queue's record converts to the Reasons
// that recording the same triggers gives, kinds the controller does not count included.
func TestReasonsConversion(t *testing.T) {
	full := Trigger{Kind: TriggerRetry, Event: EventDelete, Source: "s", Namespace: "ns", Name: "n", Retry: 3, After: time.Second}
	c := full.Cause()
	assert.Equal(t, full, triggerOf(&c))

	ts := []Trigger{podUpdate("a"), full, {Kind: numTriggerKinds, Name: "past the last kind"}, {Kind: 200}, {Kind: TriggerFence, Source: "timeout"}}
	var rec workqueue.Record
	var want Reasons
	for _, tr := range ts {
		rec.Add(tr.Cause())
		want.Record(tr)
	}
	assert.Equal(t, want, FromRecord(&rec))
	assert.Equal(t, Reasons{}, FromRecord(&workqueue.Record{}))
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
