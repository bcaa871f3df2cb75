package replicas

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// barrierTimeout bounds the wait of a call for the other calls of its batch; reaching it means
// the batch's calls did not run in parallel.
const barrierTimeout = 10 * time.Second

// batchRecorder is the fn of SlowStartBatch in the concurrency tests. Calls are numbered in the
// order they start. Each call waits until every call of its expected batch has started (so a
// batch whose calls do not run in parallel fails the test instead of passing by luck) and
// records how many calls had finished when it started.
type batchRecorder struct {
	t       *testing.T
	batches []int // the expected batch sizes
	fail    func(call int) error

	started, finished atomic.Int64
	mu                sync.Mutex
	inBatch           []int
	full              []chan struct{}
	finishedAtStart   []int64 // per call
}

func newBatchRecorder(t *testing.T, batches []int, fail func(call int) error) *batchRecorder {
	r := &batchRecorder{t: t, batches: batches, fail: fail, inBatch: make([]int, len(batches))}
	for range batches {
		r.full = append(r.full, make(chan struct{}))
	}
	return r
}

// batchOf returns the expected batch of the call-th call.
func (r *batchRecorder) batchOf(call int) int {
	for b, size := range r.batches {
		if call < size {
			return b
		}
		call -= size
	}
	return len(r.batches) // a call beyond the expected ones
}

func (r *batchRecorder) fn() error {
	call := int(r.started.Add(1)) - 1
	fin := r.finished.Load()
	defer r.finished.Add(1)
	b := r.batchOf(call)
	r.mu.Lock()
	r.finishedAtStart = append(r.finishedAtStart, fin)
	if b == len(r.batches) {
		r.mu.Unlock()
		r.t.Errorf("call %d is beyond the expected batches %v", call, r.batches)
		return nil
	}
	r.inBatch[b]++
	if r.inBatch[b] == r.batches[b] {
		close(r.full[b])
	}
	r.mu.Unlock()
	select {
	case <-r.full[b]:
	case <-time.After(barrierTimeout):
		r.t.Errorf("call %d: batch %d (size %d) did not start all its calls together", call, b, r.batches[b])
	}
	if r.fail != nil {
		return r.fail(call)
	}
	return nil
}

// check asserts that every call started when exactly the calls of the earlier batches had
// finished: batches never overlap.
func (r *batchRecorder) check() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	before := 0
	var want []int64
	for _, size := range r.batches {
		for range size {
			want = append(want, int64(before))
		}
		before += size
	}
	// Within a batch calls start in any order, but all see the same count.
	assert.Equal(r.t, want, r.finishedAtStart, "calls finished when each call started")
}

func TestSlowStartBatchBatchesAreParallelAndNeverOverlap(t *testing.T) {
	for _, tc := range []struct {
		count, initial int
		batches        []int
	}{
		{count: 1, initial: 1, batches: []int{1}},
		{count: 10, initial: 1, batches: []int{1, 2, 4, 3}},
		{count: 15, initial: 1, batches: []int{1, 2, 4, 8}},
		{count: 31, initial: 3, batches: []int{3, 6, 12, 10}},
		{count: 2, initial: 5, batches: []int{2}},
		{count: 3, initial: 0, batches: []int{1, 2}},  // 0 means SlowStartInitialBatchSize
		{count: 3, initial: -4, batches: []int{1, 2}}, // as does anything below
	} {
		t.Run(fmt.Sprintf("count=%d,initial=%d", tc.count, tc.initial), func(t *testing.T) {
			r := newBatchRecorder(t, tc.batches, nil)
			ok, err := SlowStartBatch(context.Background(), tc.count, tc.initial, r.fn)
			require.NoError(t, err)
			assert.Equal(t, tc.count, ok)
			assert.Equal(t, int64(tc.count), r.started.Load())
			r.check()
		})
	}
}

func TestSlowStartBatchStopsAfterTheFirstFailingBatch(t *testing.T) {
	refused := errors.New("refused")
	for _, tc := range []struct {
		name     string
		count    int
		failing  []int // calls, in start order, that fail
		batches  []int // the batches expected to run
		wantOK   int
		wantErrs int
	}{
		{name: "first call fails", count: 10, failing: []int{0}, batches: []int{1}, wantOK: 0, wantErrs: 1},
		{name: "one call of the second batch", count: 10, failing: []int{2}, batches: []int{1, 2}, wantOK: 2, wantErrs: 1},
		{name: "two of the third batch", count: 10, failing: []int{3, 6}, batches: []int{1, 2, 4}, wantOK: 5, wantErrs: 2},
		{name: "the short last batch", count: 10, failing: []int{9}, batches: []int{1, 2, 4, 3}, wantOK: 9, wantErrs: 1},
		{name: "every call of the last batch", count: 5, failing: []int{3, 4}, batches: []int{1, 2, 2}, wantOK: 3, wantErrs: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newBatchRecorder(t, tc.batches, func(call int) error {
				for _, f := range tc.failing {
					if f == call {
						return fmt.Errorf("call %d: %w", call, refused)
					}
				}
				return nil
			})
			ok, err := SlowStartBatch(context.Background(), tc.count, 1, r.fn)
			assert.Equal(t, tc.wantOK, ok)
			sent := 0
			for _, b := range tc.batches {
				sent += b
			}
			assert.Equal(t, int64(sent), r.started.Load(), "no call after the failing batch")
			r.check()

			var be *BatchError
			require.ErrorAs(t, err, &be)
			assert.Equal(t, tc.batches[len(tc.batches)-1], be.Calls, "the failing batch's size")
			assert.Len(t, be.Errs, tc.wantErrs)
			assert.ErrorIs(t, err, refused)
		})
	}
}

// Every failure of the failing batch is in the error, for errors.Is and errors.As; the message
// is the first one's.
func TestSlowStartBatchAggregatesTheBatchsErrors(t *testing.T) {
	quota, webhook := errors.New("exceeded quota"), errors.New("denied by webhook")
	var calls atomic.Int64
	_, err := SlowStartBatch(context.Background(), 2, 2, func() error {
		if calls.Add(1) == 1 {
			return quota
		}
		return webhook
	})
	assert.ErrorIs(t, err, quota)
	assert.ErrorIs(t, err, webhook)
	assert.Regexp(t, `^2 of 2 calls failed, the first: (exceeded quota|denied by webhook)$`, err.Error())

	_, err = SlowStartBatch(context.Background(), 4, 4, func() error {
		if calls.Add(1) == 3 {
			return quota
		}
		return nil
	})
	assert.Equal(t, "exceeded quota", err.Error(), "one failure reads as itself")
}

// A context cancelled during a batch lets the batch finish and sends no further batch.
func TestSlowStartBatchStopsWhenTheContextIsDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newBatchRecorder(t, []int{1, 2}, func(call int) error {
		if call == 2 { // the second batch's last call
			cancel()
		}
		return nil
	})
	ok, err := SlowStartBatch(ctx, 10, 1, r.fn)
	assert.Equal(t, 3, ok)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "after 3 of 10 calls")
	assert.Equal(t, int64(3), r.started.Load())
	r.check()

	ok, err = SlowStartBatch(ctx, 5, 1, func() error {
		t.Error("no call with a done context")
		return nil
	})
	assert.Zero(t, ok)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestSlowStartBatchEdgeCases(t *testing.T) {
	never := func() error {
		t.Error("fn was called")
		return nil
	}
	for _, count := range []int{0, -1} {
		ok, err := SlowStartBatch(context.Background(), count, 1, never)
		assert.NoError(t, err)
		assert.Zero(t, ok)
	}
	ok, err := SlowStartBatch(context.Background(), 3, 1, nil)
	assert.ErrorIs(t, err, ErrNoFunc)
	assert.Zero(t, ok)
}

func TestInParallelCallsEveryItemOnceAndReturnsFailuresInOrder(t *testing.T) {
	items := make([]int, 50)
	for i := range items {
		items[i] = i
	}
	var mu sync.Mutex
	seen := map[int]int{}
	err := InParallel(items, 0, func(i int) error {
		mu.Lock()
		seen[i]++
		mu.Unlock()
		if i%10 == 3 {
			return fmt.Errorf("item %d", i)
		}
		return nil
	})
	assert.Len(t, seen, len(items))
	for i, n := range seen {
		assert.Equal(t, 1, n, "item %d", i)
	}
	var be *BatchError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, 50, be.Calls)
	var msgs []string
	for _, e := range be.Errs {
		msgs = append(msgs, e.Error())
	}
	assert.Equal(t, []string{"item 3", "item 13", "item 23", "item 33", "item 43"}, msgs)
	assert.Equal(t, "5 of 50 calls failed, the first: item 3", err.Error())

	assert.NoError(t, InParallel(items, 0, func(int) error { return nil }))
	assert.NoError(t, InParallel(nil, 0, func(int) error { return errors.New("not called") }))
	assert.ErrorIs(t, InParallel(items, 0, nil), ErrNoFunc)
}

// limit > 0 caps the calls in flight; every call still runs. With limit 0 all run at once.
func TestInParallelLimit(t *testing.T) {
	for _, tc := range []struct{ items, limit, wantMax int }{
		{items: 20, limit: 3, wantMax: 3},
		{items: 20, limit: 0, wantMax: 20},
		{items: 4, limit: 10, wantMax: 4},
	} {
		t.Run(fmt.Sprintf("items=%d,limit=%d", tc.items, tc.limit), func(t *testing.T) {
			var inFlight, maxInFlight, started, calls atomic.Int64
			full := make(chan struct{})
			err := InParallel(make([]struct{}, tc.items), tc.limit, func(struct{}) error {
				calls.Add(1)
				n := inFlight.Add(1)
				defer inFlight.Add(-1)
				for m := maxInFlight.Load(); n > m && !maxInFlight.CompareAndSwap(m, n); m = maxInFlight.Load() {
				}
				// The first wantMax calls wait for each other: they must be able to run at
				// the same time.
				if s := started.Add(1); s <= int64(tc.wantMax) {
					if s == int64(tc.wantMax) {
						close(full)
					}
					select {
					case <-full:
					case <-time.After(barrierTimeout):
						t.Errorf("%d calls did not run at the same time", tc.wantMax)
					}
				}
				return nil
			})
			require.NoError(t, err)
			assert.Equal(t, int64(tc.items), calls.Load())
			assert.Equal(t, int64(tc.wantMax), maxInFlight.Load())
		})
	}
}
