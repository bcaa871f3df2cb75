package workqueue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/workqueue"
)

const (
	causeEvent uint8 = iota + 1
	causeRetry
)

// A held item is not handed out before its delay ends, however many adds come meanwhile; it is
// handed out once, then, with every add's cause in its record and the highest priority.
func TestHoldKeepsAnItemOutUntilItsDelayEnds(t *testing.T) {
	q, clk := newFakeQueue(t, workqueue.WithProvenance[string]())
	q.AddWithOpts(workqueue.AddOpts{After: time.Second, Hold: true, Cause: workqueue.Cause{Kind: causeRetry}}, "a")
	for range 10 {
		q.Add("a")
		q.Add("b") // not held
		q.AddWithOpts(workqueue.AddOpts{Priority: 5, Cause: workqueue.Cause{Kind: causeEvent}}, "a")
		q.AddAfter("a", time.Millisecond) // an earlier delay does not cut the hold short
		clk.Step(90 * time.Millisecond)
	}
	assert.Equal(t, []string{"b"}, drainOrder(q), "only the item not held came out")
	clk.Step(100 * time.Millisecond)
	q.AddWithOpts(workqueue.AddOpts{Priority: 1}, "c")
	require.Equal(t, 2, q.Len())
	item, rec, _ := q.GetWithRecord()
	assert.Equal(t, "a", item, "the held item kept the highest priority of the adds it absorbed")
	assert.Equal(t, 1, rec.Count(causeRetry))
	assert.Equal(t, 10, rec.Count(causeEvent), "every add's cause is in the record")
	q.Done("a")
	assert.Equal(t, []string{"c"}, drainOrder(q), "a is handed out once")

	q.Add("a")
	assert.Equal(t, []string{"a"}, drainOrder(q), "the hold ended with the delay")
}

// An add while the item is being processed would hand it out again right after Done; once the
// item is held (its retry added before Done), that re-add waits for the hold too.
func TestHoldAbsorbsAnAddWhileProcessing(t *testing.T) {
	q, clk := newFakeQueue(t)
	q.Add("a")
	mustGet(t, q, "a")
	q.Add("a") // an event during the Reconcile
	q.AddWithOpts(workqueue.AddOpts{After: time.Second, Hold: true}, "a")
	q.Add("a") // and one after the retry was added
	q.Done("a")
	assert.Equal(t, 0, q.Len(), "Done did not hand the held item out again")
	clk.Step(time.Second)
	assert.Equal(t, []string{"a"}, drainOrder(q))
	clk.Step(time.Hour)
	assert.Equal(t, 0, q.Len(), "once")

	// Without Hold, client-go's rule: the re-add hands it out at Done.
	q.Add("a")
	mustGet(t, q, "a")
	q.Add("a")
	q.AddAfter("a", time.Second)
	q.Done("a")
	assert.Equal(t, []string{"a"}, drainOrder(q))
}

// The rate limiter counts a held rate-limited add as any other: failures counted on attempts.
func TestHoldWithTheRateLimiter(t *testing.T) {
	q, clk := newFakeQueue(t)
	q.AddWithOpts(workqueue.AddOpts{RateLimited: true, Hold: true}, "a")
	assert.Equal(t, 1, q.NumRequeues("a"))
	q.Add("a")
	assert.Equal(t, 0, q.Len(), "held for the limiter's delay")
	clk.Step(time.Second)
	assert.Equal(t, []string{"a"}, drainOrder(q))
}

// A hold of an item already ready leaves it ready: it is due now anyway.
func TestHoldOfAReadyItem(t *testing.T) {
	q, clk := newFakeQueue(t)
	q.Add("a")
	q.AddWithOpts(workqueue.AddOpts{After: time.Second, Hold: true}, "a")
	assert.Equal(t, []string{"a"}, drainOrder(q))
	q.Add("a")
	assert.Equal(t, []string{"a"}, drainOrder(q), "not held: it was ready")
	clk.Step(time.Second)
	assert.Equal(t, []string{"a"}, drainOrder(q), "the delayed add still comes")
}

// Items held at ShutDown are dropped with the other delayed items; their entries do not leak.
func TestHoldAtShutDown(t *testing.T) {
	q, _ := newFakeQueue(t)
	q.AddWithOpts(workqueue.AddOpts{After: time.Second, Hold: true}, "a")
	q.Add("a")
	q.ShutDown()
	_, shutdown := q.Get()
	assert.True(t, shutdown)
}

// With WakeAfter, the first add that joins a hold ends it WakeAfter after the held add; the
// adds after it join as before, and the item is handed out once.
func TestHoldWakeAfter(t *testing.T) {
	q, clk := newFakeQueue(t, workqueue.WithProvenance[string]())
	q.AddWithOpts(workqueue.AddOpts{After: time.Minute, Hold: true, WakeAfter: 5 * time.Second, Cause: workqueue.Cause{Kind: causeRetry}}, "a")
	clk.Step(4 * time.Second)
	assert.Equal(t, 0, q.Len(), "no add joined: held")
	q.AddWithOpts(workqueue.AddOpts{Cause: workqueue.Cause{Kind: causeEvent}}, "a")
	assert.Equal(t, 0, q.Len(), "the wake comes 5 s after the held add, not at the add")
	clk.Step(999 * time.Millisecond)
	q.Add("a")
	assert.Equal(t, 0, q.Len())
	clk.Step(time.Millisecond)
	item, rec, _ := q.GetWithRecord()
	assert.Equal(t, "a", item)
	assert.Equal(t, 2, rec.Count(causeEvent)+rec.Count(0), "the adds that joined are in the record")
	q.Done("a")
	clk.Step(time.Hour)
	assert.Equal(t, 0, q.Len(), "the held add came out with the wake: once")

	// An add that joins after the wake time hands the item out at once.
	q.AddWithOpts(workqueue.AddOpts{After: time.Minute, Hold: true, WakeAfter: time.Second}, "b")
	clk.Step(10 * time.Second)
	assert.Equal(t, 0, q.Len())
	q.Add("b")
	assert.Equal(t, []string{"b"}, drainOrder(q))

	// A wake no sooner than the delay changes nothing.
	q.AddWithOpts(workqueue.AddOpts{After: time.Second, Hold: true, WakeAfter: time.Minute}, "c")
	q.Add("c")
	assert.Equal(t, 0, q.Len())
	clk.Step(time.Second)
	assert.Equal(t, []string{"c"}, drainOrder(q))
}

// An add while the item is being processed, before or after its held retry was added, is an
// add joining the hold: at Done, the wake is set.
func TestHoldWakeAfterAnAddWhileProcessing(t *testing.T) {
	q, clk := newFakeQueue(t)
	q.Add("a")
	mustGet(t, q, "a")
	q.Add("a") // an event the failing Reconcile may not have seen
	q.AddWithOpts(workqueue.AddOpts{After: time.Minute, Hold: true, WakeAfter: 2 * time.Second}, "a")
	q.Done("a")
	assert.Equal(t, 0, q.Len())
	clk.Step(2 * time.Second)
	assert.Equal(t, []string{"a"}, drainOrder(q), "woken 2 s after the held add")

	// Without an add, the hold lasts its delay.
	q.Add("a")
	mustGet(t, q, "a")
	q.AddWithOpts(workqueue.AddOpts{After: time.Minute, Hold: true, WakeAfter: 2 * time.Second}, "a")
	q.Done("a")
	clk.Step(59 * time.Second)
	assert.Equal(t, 0, q.Len())
	clk.Step(time.Second)
	assert.Equal(t, []string{"a"}, drainOrder(q))
}
