package workqueue

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestArenaMatchesAModel allocates and releases at random, growing to thousands of entries and
// shrinking to a few, and checks after every step that live indices are unique and resolve to
// their entries, that a new entry goes to the lowest chunk with room, and that trailing free
// chunks are dropped but one.
func TestArenaMatchesAModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	a := newArena[int]()
	var live []*entry[int]
	byIdx := map[uint32]*entry[int]{}
	lowestWithRoom := func() int {
		for c, ch := range a.chunks {
			if ch.live < chunkSize {
				return c
			}
		}
		return len(a.chunks)
	}
	for round := range 8 {
		target := 20 + rng.IntN(6000)
		if round%2 == 1 {
			target = rng.IntN(300)
		}
		for range 20_000 {
			if len(live) > target || len(live) > 0 && rng.IntN(3) == 0 {
				i := rng.IntN(len(live))
				e := live[i]
				live[i] = live[len(live)-1]
				live = live[:len(live)-1]
				delete(byIdx, e.idx)
				e.item = 0
				a.release(e)
			} else {
				want := lowestWithRoom()
				e := a.alloc()
				require.NotNil(t, e)
				require.Equal(t, want, int(e.idx>>chunkBits), "chunk of a new entry")
				if _, dup := byIdx[e.idx]; dup {
					t.Fatalf("index %d handed out twice", e.idx)
				}
				require.Zero(t, e.item, "a free entry keeps an item")
				e.item = int(e.idx) + 1
				byIdx[e.idx] = e
				live = append(live, e)
			}
			n := len(a.chunks)
			if len(live) != a.n || n > keepChunks && a.chunks[n-1].live == 0 && a.chunks[n-2].live == 0 ||
				len(a.hasFree) != (n+63)/64 {
				t.Fatalf("%d entries live, arena counts %d; %d chunks, the last two with %d and %d live; %d words of hasFree",
					len(live), a.n, n, a.chunks[n-1].live, a.chunks[max(n-2, 0)].live, len(a.hasFree))
			}
		}
		for idx, e := range byIdx {
			require.Same(t, e, a.at(idx))
			require.Equal(t, int(idx)+1, e.item)
		}
	}
	for _, e := range live {
		a.release(e)
	}
	assert.Zero(t, a.n)
	assert.Len(t, a.chunks, keepChunks)
}

// TestArenaReusesTheLastReleasedEntry: a steady add-and-done keeps using one warm entry.
func TestArenaReusesTheLastReleasedEntry(t *testing.T) {
	a := newArena[string]()
	e := a.alloc()
	a.release(e)
	for range 10 {
		f := a.alloc()
		require.Same(t, e, f)
		a.release(f)
	}
	require.Len(t, a.chunks, 1)
}

// TestArenaLimit: alloc refuses beyond the limit and works again once entries are released.
func TestArenaLimit(t *testing.T) {
	a := newArena[int]()
	a.limit = chunkSize
	var es []*entry[int]
	for range chunkSize {
		e := a.alloc()
		require.NotNil(t, e)
		es = append(es, e)
	}
	require.Nil(t, a.alloc())
	a.release(es[1])
	require.Same(t, es[1], a.alloc())
	require.Equal(t, chunkSize, a.n)
	require.Len(t, a.chunks, 1)
}

// TestQueueBeyondMaxEntries: at the limit, adds of new items are dropped (also delayed ones);
// items already known still dedup, change priority and requeue, and nothing is corrupted.
func TestQueueBeyondMaxEntries(t *testing.T) {
	q, clk := newTestQueue(t)
	q.items.arena.limit = chunkSize
	var want []string
	for i := range chunkSize {
		q.Add(strconv.Itoa(i))
		want = append(want, strconv.Itoa(i))
	}
	q.Add("new")
	q.AddAfter("delayed", time.Second)
	q.AddWithOpts(AddOpts{Priority: 1}, "raised", "5")
	clk.Step(time.Second)
	require.Equal(t, chunkSize, q.Len())
	item, _ := q.Get()
	require.Equal(t, "5", item, "the known item keeps its raised priority")
	q.Add("5") // dirty: requeued at Done
	q.Done("5")
	want = append(append(want[:5:5], want[6:]...), "5")
	require.Equal(t, want, drain(q))
	q.Add("after")
	require.Equal(t, []string{"after"}, drain(q))
	assertEmptyInside(t, q)

	// Retired entries, which a busy queue keeps until their batch is full, do not count.
	for i := range chunkSize {
		q.Add(strconv.Itoa(i))
	}
	busy, _ := q.Get()
	const done = chunkSize/2 + retireBatch/2 // not a whole number of batches
	for range done {
		item, _ := q.Get()
		q.Done(item)
	}
	for i := range done {
		q.Add("refill" + strconv.Itoa(i))
	}
	require.Equal(t, chunkSize-1, q.Len(), "no add dropped while retired entries held the room")
	q.Done(busy)
	drain(q)
	assertEmptyInside(t, q)
}

// TestStaleSlotsIntoDroppedChunks: ring slots left stale by a priority raise still point into
// chunks that are dropped when those entries finish; they must stay stale (skipped), and the
// live items behind them be handed out once each.
func TestStaleSlotsIntoDroppedChunks(t *testing.T) {
	q, _ := newTestQueue(t)
	const keep, raised = 4000, 2000
	for i := range keep + raised {
		q.Add(strconv.Itoa(i))
	}
	for i := keep; i < keep+raised; i++ {
		q.AddWithOpts(AddOpts{Priority: 1}, strconv.Itoa(i))
	}
	for i := keep; i < keep+raised; i++ {
		item, _ := q.Get()
		require.Equal(t, strconv.Itoa(i), item)
		q.Done(item)
	}
	q.mu.Lock()
	q.flushRetiredLocked() // the last Dones' batch, which the next Dones would fill
	chunks := len(q.items.arena.chunks)
	q.mu.Unlock()
	require.LessOrEqual(t, chunks, keep/chunkSize+2, "the raised items' chunks were not dropped")
	for i := range raised { // new entries reuse the low indices only after the live ones
		q.Add("new" + strconv.Itoa(i))
	}
	got := drain(q)
	require.Len(t, got, keep+raised)
	for i := range keep {
		require.Equal(t, strconv.Itoa(i), got[i])
	}
	for i := range raised {
		require.Equal(t, "new"+strconv.Itoa(i), got[keep+i])
	}
	assertEmptyInside(t, q)
}

// TestChunksFollowTheQueueDown: after a burst, a queue that keeps a few items at all times
// (never empty) gives its chunks back as the burst's items finish, as new items take the lowest
// free entries.
func TestChunksFollowTheQueueDown(t *testing.T) {
	q, _ := newTestQueue(t)
	const burst, inFlight = 50_000, 10
	chunks := func() int {
		q.mu.Lock()
		defer q.mu.Unlock()
		return len(q.items.arena.chunks)
	}
	for i := range burst {
		q.Add(strconv.Itoa(i))
	}
	peak := chunks()
	require.GreaterOrEqual(t, peak, burst/chunkSize)
	// Drain to inFlight items, then keep that many in flight: each one handed out is replaced by
	// a new one.
	for range burst - inFlight {
		item, _ := q.Get()
		q.Done(item)
	}
	assert.Equal(t, peak, chunks(), "the items added last still hold the last chunk")
	// The burst's last items leave the table with the batch of retired entries they join
	// (retireLocked), so this runs until that batch is full.
	for i := range 2*inFlight + retireBatch {
		item, _ := q.Get()
		q.Add("steady" + strconv.Itoa(i))
		q.Done(item)
	}
	assert.Equal(t, inFlight, q.Len())
	assert.LessOrEqual(t, chunks(), keepChunks, "chunks once the burst's items are gone")
}
