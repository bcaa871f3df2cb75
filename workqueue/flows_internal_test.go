package workqueue

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// byPrefix is the flow of "tenant/name" keys.
func byPrefix(k string) string {
	tenant, _, _ := strings.Cut(k, "/")
	return tenant
}

// TestAgingMarksSurviveCompaction checks that compacting a ring keeps its aging marks on the
// same items: the old items are promoted at the bound, the young ones are not.
func TestAgingMarksSurviveCompaction(t *testing.T) {
	for _, flows := range []bool{false, true} {
		t.Run("flows="+strconv.FormatBool(flows), func(t *testing.T) {
			const bound = 40 * time.Second
			opts := []Option[string]{WithAging[string](bound)}
			if flows {
				opts = append(opts, WithFlows(byPrefix))
			}
			q, clk := newTestQueue(t, opts...)
			for i := range 100 {
				q.Add("t/old-" + strconv.Itoa(i))
			}
			clk.Step(bound / 4)
			q.Len() // counts the tick: the 100 are older than it
			for i := range 10 {
				q.Add("t/young-" + strconv.Itoa(i))
			}
			// Raising 60 of the old ones leaves 60 stale slots of 110: the ring is compacted.
			for i := range 60 {
				q.AddWithOpts(AddOpts{Priority: 1}, "t/old-"+strconv.Itoa(i))
			}
			assert.Less(t, liveAt0(q, flows).n, 110, "not compacted")
			clk.Step(bound)
			q.Len()
			r := liveAt0(q, flows)
			assert.Equal(t, 10, r.n-r.stale, "items left at priority 0: only the young ones")
			got := drain(q)
			require.Len(t, got, 110)
			for i, k := range got[:100] {
				assert.Contains(t, k, "old-", "item %d", i)
			}
			for i, k := range got[100:] {
				assert.Contains(t, k, "young-", "item %d", 100+i)
			}
			assertEmptyInside(t, q)
		})
	}
}

// liveAt0 returns a copy of the ring of priority 0 (of flow "t" with flows).
func liveAt0(q *Queue[string], flows bool) ring[string] {
	q.mu.Lock()
	defer q.mu.Unlock()
	l := q.ready.level(0)
	if !flows {
		return l.ring
	}
	if f := l.flows["t"]; f != nil {
		return f.ring
	}
	return ring[string]{}
}

// TestAgingWaitsForTheBound checks the promotion's timing on the queue's own goroutine:
// not before the bound, and by 5/4 of it.
func TestAgingWaitsForTheBound(t *testing.T) {
	const bound = 40 * time.Second
	q, clk := newTestQueue(t, WithAging[string](bound))
	q.AddWithOpts(AddOpts{Priority: -1}, "low")
	q.AddWithOpts(AddOpts{Priority: 1}, "high")
	for range 4 {
		stepTicker(t, clk, bound/4)
	}
	q.Len() // ages now, rather than whenever the goroutine runs
	q.mu.Lock()
	assert.Equal(t, -1, q.items.get(q.items.hash("low"), "low").prio, "promoted before the bound")
	q.mu.Unlock()
	stepTicker(t, clk, bound/4)
	require.Eventually(t, func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.items.get(q.items.hash("low"), "low").prio == 1
	}, 10*time.Second, time.Millisecond, "not promoted by 5/4 of the bound")
	assert.Equal(t, []string{"high", "low"}, drain(q))
}

// stepTicker steps clk by d once the aging goroutine waits on its ticker.
func stepTicker(t *testing.T, clk interface {
	HasWaiters() bool
	Step(time.Duration)
}, d time.Duration) {
	t.Helper()
	require.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond)
	clk.Step(d)
}

func TestFlowsAreRecycled(t *testing.T) {
	q, _ := newTestQueue(t, WithFlows(byPrefix))
	for round := range 3 {
		for i := range 2000 {
			q.Add("tenant-" + strconv.Itoa(i) + "/x" + strconv.Itoa(round))
		}
		// A large flow, drained last: its ring is let go rather than kept idle.
		for i := range 100 {
			q.Add("big/" + strconv.Itoa(i))
		}
		assert.Len(t, drain(q), 2100)
		q.mu.Lock()
		assert.Len(t, q.ready.level(0).flows, keepIdle, "idle flows kept")
		for _, f := range q.ready.level(0).flows {
			assert.LessOrEqual(t, len(f.buf), keepFlowRing, "idle flow %q keeps a large ring", f.key)
		}
		assert.LessOrEqual(t, len(q.ready.free), keepFlows)
		for _, f := range q.ready.free {
			assert.LessOrEqual(t, len(f.buf), keepFlowRing)
		}
		q.mu.Unlock()
	}
	assertEmptyInside(t, q)
}

// TestFlowsRaiseAndAbandon covers a flow that loses its last live item to a priority raise: it
// leaves the rotation at once, and joins at the back when it has items again.
func TestFlowsRaiseAndAbandon(t *testing.T) {
	q, _ := newTestQueue(t, WithFlows(byPrefix))
	q.Add("a/1")
	q.Add("b/1")
	q.AddWithOpts(AddOpts{Priority: 1}, "a/1") // a has no item left at 0
	q.Add("a/2")                               // a joins behind b
	assert.Equal(t, []string{"a/1", "b/1", "a/2"}, drain(q))
	assertEmptyInside(t, q)
}
