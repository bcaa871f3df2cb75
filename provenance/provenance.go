package provenance

import (
	"strconv"
	"strings"
	"time"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// TriggerKind says what made a key be queued.
type TriggerKind uint8

// The kinds of trigger. The zero kind is an add that named no cause (an add through the
// queue's own Add, AddAfter or AddRateLimited on a controller with provenance).
const (
	TriggerUnspecified  TriggerKind = iota // an add that named no cause
	TriggerEvent                           // an informer add, update or delete
	TriggerResync                          // an informer update with an unchanged resourceVersion
	TriggerRetry                           // a retry after a failed reconcile
	TriggerRequeue                         // a successful reconcile asked for Requeue
	TriggerRequeueAfter                    // a successful reconcile asked for RequeueAfter
	TriggerManual                          // an explicit Enqueue call
	TriggerFence                           // a write fence of the key was released or timed out
	TriggerPaced                           // pacing held the key back (Options.Debounce, MinInterval, Limiters)
	TriggerStale                           // held while a cache lagged behind the API server (Options.Freshness.MaxLag)
	numTriggerKinds
)

// The queue counts at most workqueue.CauseKinds kinds: a compile error if there are more.
var _ [workqueue.CauseKinds - numTriggerKinds]struct{}

var triggerNames = [numTriggerKinds]string{"unspecified", "event", "resync", "retry", "requeue", "requeueAfter", "manual", "fence", "paced", "stale"}

// String returns the kind's name as logs show it, such as "event" or "requeueAfter".
func (k TriggerKind) String() string {
	if k < numTriggerKinds {
		return triggerNames[k]
	}
	return "TriggerKind(" + strconv.Itoa(int(k)) + ")"
}

// EventType is the informer event behind a TriggerEvent or TriggerResync.
type EventType uint8

// The informer events. EventNone is for triggers that are not events.
const (
	EventNone EventType = iota
	EventAdd
	EventUpdate
	EventDelete
)

// String returns "add", "update", "delete", or "" for EventNone.
func (e EventType) String() string {
	switch e {
	case EventAdd:
		return "add"
	case EventUpdate:
		return "update"
	case EventDelete:
		return "delete"
	case EventNone:
		return ""
	}
	return "EventType(" + strconv.Itoa(int(e)) + ")"
}

// Trigger is one cause of a key being queued: an informer event (with the informer, the event
// type and the object that mapped to the key), a resync, a retry, a Requeue or RequeueAfter,
// an Enqueue call, a released fence. Only the fields of its Kind are set. Its strings are the
// ones the caller passed (an informer's name, a cached object's namespace and name), so
// recording a trigger copies no bytes.
type Trigger struct {
	Kind TriggerKind
	// Event is the informer event of a TriggerEvent or TriggerResync.
	Event EventType
	// Source names where the trigger came from: the informer's name for events and resyncs.
	Source string
	// Namespace and Name identify the object whose event was mapped to the key (a child's
	// event names the child, not the owner it was mapped to).
	Namespace, Name string
	// Retry is the retry number of a TriggerRetry: 1 for the first retry.
	Retry int
	// After is the delay of a TriggerRequeueAfter or of a delayed add.
	After time.Duration
}

// String renders the trigger compactly, such as "event:update pods default/web-1" or "retry#3".
func (t Trigger) String() string {
	var b strings.Builder
	t.write(&b)
	return b.String()
}

func (t Trigger) write(b *strings.Builder) {
	b.WriteString(t.Kind.String())
	if t.Event != EventNone {
		b.WriteByte(':')
		b.WriteString(t.Event.String())
	}
	if t.Source != "" {
		b.WriteByte(' ')
		b.WriteString(t.Source)
	}
	if t.Name != "" {
		b.WriteByte(' ')
		if t.Namespace != "" {
			b.WriteString(t.Namespace)
			b.WriteByte('/')
		}
		b.WriteString(t.Name)
	}
	if t.Retry > 0 {
		b.WriteByte('#')
		b.WriteString(strconv.Itoa(t.Retry))
	}
	if t.After > 0 {
		b.WriteString(" after ")
		b.WriteString(t.After.String())
	}
}

// Reasons is the bounded record of why a key was queued since it was last handed to a worker:
// how many triggers of each kind, and the first and the last of them in full. Its size is
// fixed whatever the number of triggers, so a key that thousands of events dedup into costs no
// more than one. The zero Reasons records nothing (a controller without provenance hands out
// only zero Reasons).
type Reasons struct {
	// Total is the number of triggers merged.
	Total int
	// First and Last are the earliest and the latest trigger; equal when Total is 1.
	First, Last Trigger

	counts [numTriggerKinds]int32
}

// IsZero reports whether no trigger was recorded.
func (r Reasons) IsZero() bool { return r.Total == 0 }

// Count returns how many triggers of kind k were merged.
func (r Reasons) Count(k TriggerKind) int {
	if k >= numTriggerKinds {
		return 0
	}
	return int(r.counts[k])
}

// Record merges one trigger.
func (r *Reasons) Record(t Trigger) {
	rec := r.record()
	rec.Add(t.Cause())
	*r = FromRecord(&rec)
}

// Merge merges o, recorded after r, into r.
func (r *Reasons) Merge(o Reasons) {
	rec := r.record()
	rec.Merge(o.record())
	*r = FromRecord(&rec)
}

// String renders the record on one line, such as
// "3 triggers (event=2 retry=1); first: event:update pods default/web-1; last: retry#1".
func (r Reasons) String() string {
	if r.Total == 0 {
		return "none"
	}
	var b strings.Builder
	b.WriteString(strconv.Itoa(r.Total))
	if r.Total == 1 {
		b.WriteString(" trigger: ")
		r.First.write(&b)
		return b.String()
	}
	b.WriteString(" triggers (")
	sep := ""
	for k, n := range r.counts {
		if n > 0 {
			b.WriteString(sep)
			b.WriteString(TriggerKind(k).String())
			b.WriteByte('=')
			b.WriteString(strconv.Itoa(int(n)))
			sep = " "
		}
	}
	b.WriteString("); first: ")
	r.First.write(&b)
	b.WriteString("; last: ")
	r.Last.write(&b)
	return b.String()
}

// MarshalLog makes a logr sink (klog's among them) print the record as its String form rather
// than as a struct dump.
func (r Reasons) MarshalLog() any { return r.String() }

// Cause is t as a workqueue stores it (workqueue.AddOpts.Cause): the queue counts causes by
// kind and gives no field a meaning, so each field of t has its place (Event in Detail, Retry
// in N).
func (t Trigger) Cause() workqueue.Cause {
	return workqueue.Cause{
		Kind: uint8(t.Kind), Detail: uint8(t.Event), Source: t.Source,
		Namespace: t.Namespace, Name: t.Name, N: t.Retry, After: t.After,
	}
}

// triggerOf is the trigger c was made from by cause.
func triggerOf(c *workqueue.Cause) Trigger {
	return Trigger{
		Kind: TriggerKind(c.Kind), Event: EventType(c.Detail), Source: c.Source,
		Namespace: c.Namespace, Name: c.Name, Retry: c.N, After: c.After,
	}
}

// FromRecord is a workqueue's record of an item's causes (workqueue.Queue.GetWithRecord) as
// Reasons: the record of causes made by Trigger.Cause.
func FromRecord(r *workqueue.Record) Reasons {
	if r.Total == 0 {
		return Reasons{}
	}
	why := Reasons{Total: r.Total, First: triggerOf(&r.First), Last: triggerOf(&r.Last)}
	copy(why.counts[:], r.Counts[:])
	return why
}

// record is r as the queue keeps it: Record and Merge leave the arithmetic to the queue's
// Record, so that there is one implementation of it.
func (r *Reasons) record() workqueue.Record {
	if r.Total == 0 {
		return workqueue.Record{}
	}
	rec := workqueue.Record{Total: r.Total, First: r.First.Cause(), Last: r.Last.Cause()}
	copy(rec.Counts[:], r.counts[:])
	return rec
}

// EventTrigger describes an informer event on obj, for a controller's EnqueueWithTrigger from
// hand-written handlers: source is the informer's name (Informer.Name), ev the event type.
func EventTrigger[T informer.Object](source string, ev EventType, obj T) Trigger {
	return Trigger{Kind: TriggerEvent, Event: ev, Source: source, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}
