package workqueue

import "time"

// CauseKinds is the number of cause kinds a Record counts one by one: kinds 0 to CauseKinds-1.
// A cause of a higher kind is recorded (in Total, First and Last) but not counted. It is small
// because the counts are most of a Record's fixed size, and two Records per item are the whole
// memory cost of provenance.
const CauseKinds = 10

// Cause is one reason an item was added, as the caller describes it. The queue stores causes
// and counts them by Kind; it gives none of the fields a meaning. The zero Cause is what Add,
// AddAfter and AddRateLimited record, so kind 0 is best kept for "no cause named".
//
// The strings are the ones the caller passed (an informer's name, a cached object's namespace
// and name, say), so recording a cause copies no bytes.
type Cause struct {
	// Kind is what the caller counts causes by, below CauseKinds.
	Kind uint8
	// Detail refines the kind (an event type, say).
	Detail uint8
	// Source names where the cause came from (an informer, say).
	Source string
	// Namespace and Name identify the object the cause is about.
	Namespace, Name string
	// N is a number the caller attaches (a retry number, say).
	N int
	// After is a delay the caller attaches; the queue does not read it (AddOpts.After delays
	// the add).
	After time.Duration
}

// Record is the merged record of why an item was added since it was last handed out: how
// many causes of each kind, and the first and the last of them in full. Its size is fixed
// whatever the number of causes, so an item that thousands of adds dedup into costs no more
// than one. The zero Record holds nothing (a queue without provenance hands out only zero
// Records).
type Record struct {
	// Total is the number of causes merged.
	Total int
	// First and Last are the earliest and the latest cause; equal when Total is 1.
	First, Last Cause
	// Counts[k] is how many causes of kind k were merged; causes of kinds from CauseKinds on
	// are in Total only.
	Counts [CauseKinds]int32
}

// IsZero reports whether no cause was recorded.
func (r Record) IsZero() bool { return r.Total == 0 }

// Count returns how many causes of the given kind were merged: 0 for kinds from CauseKinds on.
func (r Record) Count(kind uint8) int {
	if kind >= CauseKinds {
		return 0
	}
	return int(r.Counts[kind])
}

// Add merges one cause.
func (r *Record) Add(c Cause) {
	if r.Total == 0 {
		r.First = c
	}
	r.Last = c
	r.Total++
	if c.Kind < CauseKinds {
		r.Counts[c.Kind]++
	}
}

// Merge merges o, recorded after r, into r.
func (r *Record) Merge(o Record) {
	if o.Total == 0 {
		return
	}
	if r.Total == 0 {
		*r = o
		return
	}
	r.Last = o.Last
	r.Total += o.Total
	for i, n := range o.Counts {
		r.Counts[i] += n
	}
}

// provenance is an entry's record: what made it ready, and what will when its delay ends.
type provenance struct {
	ready   Record
	waiting Record
}

// WithProvenance makes the queue keep a Record per item: every add merges its cause
// (AddOpts.Cause, or the zero Cause for Add, AddAfter and AddRateLimited) into the record, and
// GetWithRecord hands the record out with the item and starts a new one. A delayed add's cause
// joins the record when the delay ends. Without this option the queue keeps no record and
// allocates nothing for it.
func WithProvenance[T comparable]() Option[T] {
	return func(o *options[T]) { o.provenance = true }
}

// recordLocked merges c (nil: the zero Cause) into e's record, into the part that becomes
// ready when the delay ends if delayed.
func (q *Queue[T]) recordLocked(e *entry[T], c *Cause, delayed bool) {
	if e.rec == nil {
		e.rec = new(provenance)
	}
	var cc Cause
	if c != nil {
		cc = *c
	}
	if delayed {
		e.rec.waiting.Add(cc)
	} else {
		e.rec.ready.Add(cc)
	}
}

// GetWithRecord is Get that also returns why the item was added: the causes merged since it
// was last handed out. The record is zero when the queue has no provenance (WithProvenance).
func (q *Queue[T]) GetWithRecord() (item T, rec Record, shutdown bool) {
	item, shutdown = q.get(&rec)
	return item, rec, shutdown
}

// DoneAndTryGetWithRecord is DoneAndTryGet that also returns why the next item was added, as
// GetWithRecord does.
func (q *Queue[T]) DoneAndTryGetWithRecord(item T) (next T, rec Record, ok bool) {
	next, ok = q.doneAndTryGet(item, &rec)
	return next, rec, ok
}
