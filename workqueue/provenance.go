package workqueue

import (
	"strconv"
	"strings"
	"time"
)

// TriggerKind says what made an item be queued.
type TriggerKind uint8

// The kinds of trigger. The zero kind is an add that named no cause (Add, AddAfter or
// AddRateLimited on a queue with provenance).
const (
	TriggerUnspecified  TriggerKind = iota // an add that named no cause
	TriggerEvent                           // an informer add, update or delete
	TriggerResync                          // an informer update with an unchanged resourceVersion
	TriggerRetry                           // a retry after a failed reconcile
	TriggerRequeue                         // a successful reconcile asked for Requeue
	TriggerRequeueAfter                    // a successful reconcile asked for RequeueAfter
	TriggerManual                          // an explicit Enqueue call
	TriggerFence                           // a write fence of the item was released or timed out
	numTriggerKinds
)

var triggerNames = [numTriggerKinds]string{"unspecified", "event", "resync", "retry", "requeue", "requeueAfter", "manual", "fence"}

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

// Trigger is one cause of an item being queued. Only the fields of its Kind are set. Its
// strings are the ones the caller passed (an informer's name, a cached object's namespace
// and name), so recording a trigger copies no bytes.
type Trigger struct {
	Kind TriggerKind
	// Event is the informer event of a TriggerEvent or TriggerResync.
	Event EventType
	// Source names where the trigger came from: the informer's name for events and resyncs.
	Source string
	// Namespace and Name identify the object whose event was mapped to the item (a child's
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

// Reasons is the merged record of why an item was queued since it was last handed out: how
// many triggers of each kind, and the first and the last of them in full. Its size is fixed
// whatever the number of triggers, so a key that thousands of events dedup into costs no more
// than one. The zero Reasons records nothing (a queue without provenance hands out only zero
// Reasons).
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
	if r.Total == 0 {
		r.First = t
	}
	r.Last = t
	r.Total++
	if t.Kind < numTriggerKinds {
		r.counts[t.Kind]++
	}
}

// Merge merges o, recorded after r, into r.
func (r *Reasons) Merge(o Reasons) {
	if o.Total == 0 {
		return
	}
	if r.Total == 0 {
		*r = o
		return
	}
	r.Last = o.Last
	r.Total += o.Total
	for i, n := range o.counts {
		r.counts[i] += n
	}
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

// provenance is an entry's record: what made it ready, and what will when its delay ends.
type provenance struct {
	ready   Reasons
	waiting Reasons
}

// WithProvenance makes the queue keep a Reasons record per item: every add merges its trigger
// (AddOpts.Trigger, or an unspecified one for Add, AddAfter and AddRateLimited) into the
// record, and GetWithReasons hands the record out with the item and starts a new one. A
// delayed add's trigger joins the record when the delay ends. Without this option the queue
// keeps no record and allocates nothing for it.
func WithProvenance[T comparable]() Option[T] {
	return func(o *options[T]) { o.provenance = true }
}

// recordLocked merges t (nil: an unspecified trigger) into e's record, into the part that
// becomes ready when the delay ends if delayed.
func (q *Queue[T]) recordLocked(e *entry[T], t *Trigger, delayed bool) {
	if e.why == nil {
		e.why = new(provenance)
	}
	var tt Trigger
	if t != nil {
		tt = *t
	}
	if delayed {
		e.why.waiting.Record(tt)
	} else {
		e.why.ready.Record(tt)
	}
}

// GetWithReasons is Get that also returns why the item was queued: the triggers merged since
// it was last handed out. The record is zero when the queue has no provenance
// (WithProvenance).
func (q *Queue[T]) GetWithReasons() (item T, why Reasons, shutdown bool) {
	item, shutdown = q.get(&why)
	return item, why, shutdown
}

// DoneAndTryGetWithReasons is DoneAndTryGet that also returns why the next item was queued,
// as GetWithReasons does.
func (q *Queue[T]) DoneAndTryGetWithReasons(item T) (next T, why Reasons, ok bool) {
	next, ok = q.doneAndTryGet(item, &why)
	return next, why, ok
}
