package controller

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kworkqueue "k8s.io/client-go/util/workqueue"

	"github.com/ctrlkit/ctrlkit/internal/discard"
	"github.com/ctrlkit/ctrlkit/provenance"
)

// faultRun is kubernetes#132805 in a synctest bubble: a key's Reconcile fails
// for fault while events for it arrive every 100 ms (Pods turning ready and
// unready), then succeeds; no event comes after the fault. It returns how
// many Reconciles ran during the fault and how long after the fault the first
// success came, in virtual time.
func faultRun(t *testing.T, opts Options[string], fault time.Duration) (calls int, converged time.Duration) {
	t.Helper()
	var mu sync.Mutex
	var start, fixedAt, okAt time.Time
	r := ReconcilerFunc[string](func(context.Context, string) (Result, error) {
		mu.Lock()
		defer mu.Unlock()
		if now := time.Now(); now.Before(fixedAt) {
			calls++
			return Result{}, errors.New("admission webhook unreachable")
		} else if okAt.IsZero() {
			okAt = now
		}
		return Result{}, nil
	})
	opts.Logger = discard.Logger() // the ~600 failures are not this test's output
	c, err := New("backoff", r, opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	mu.Lock()
	start = time.Now()
	fixedAt = start.Add(fault)
	mu.Unlock()
	c.Enqueue("rs")
	go func() { done <- c.Run(ctx) }()
	for {
		time.Sleep(100 * time.Millisecond)
		if time.Since(start) >= fault {
			break
		}
		c.Enqueue("rs")
	}
	for {
		mu.Lock()
		ok := !okAt.IsZero()
		mu.Unlock()
		if ok || time.Since(start) > time.Hour {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	require.NoError(t, <-done)
	mu.Lock()
	defer mu.Unlock()
	require.False(t, okAt.IsZero(), "converged within the hour")
	return calls, okAt.Sub(fixedAt)
}

// By default, events on a key that is backing off wait for its retry, except
// that the first event after a failure wakes the key 5 s after that failure
// (BackoffEventWait) and such an early failure is not counted: a 60 s fault
// with 10 events a second costs the Reconciles of the backoff's own schedule
// plus one every 5 s once the delay passed 5 s, and the key converges within
// 5 s of the fault's end. With the events waiting for the retry (a negative
// BackoffEventWait) it converges at its next retry after the fault, within
// one doubling of the delay. With client-go's rule (EventsBypassBackoff)
// every event runs the key and its failure counts: the retries are spent in
// seconds, and the key waits out the slow interval (or, retrying forever,
// the limiter's 1000 s cap) after the fault cleared.
func TestEventsDoNotInflateTheBackoff(t *testing.T) {
	const fault = 60 * time.Second
	synctest.Test(t, func(t *testing.T) {
		calls, converged := faultRun(t, Options[string]{}, fault)
		// 5 ms doubling: the retries at 5 ms × (2^n − 1) that fall in 60 s, the first call, and
		// a Reconcile woken 5 s after each failure once the delay exceeds 5 s (from 10.2 s on).
		assert.LessOrEqual(t, calls, 14+int((fault-10*time.Second)/(5*time.Second))+1, "at most one woken Reconcile per 5 s beyond the backoff's")
		assert.Greater(t, calls, 14, "the events woke the key between its retries")
		assert.LessOrEqual(t, converged, 5*time.Second, "converged within BackoffEventWait of the fault's end")
		t.Logf("held, woken after 5 s: %d Reconciles during the fault, converged %v after it", calls, converged)
	})
	synctest.Test(t, func(t *testing.T) {
		calls, converged := faultRun(t, Options[string]{BackoffEventWait: -1}, fault)
		assert.Equal(t, 14, calls, "Reconciles during the fault: the first call and its retries, none for the ~600 events")
		assert.Less(t, converged, 41*time.Second, "converged at the first retry after the fault (the delay had reached 41 s)")
		t.Logf("held: %d Reconciles during the fault, converged %v after it", calls, converged)
	})
	synctest.Test(t, func(t *testing.T) {
		calls, converged := faultRun(t, Options[string]{EventsBypassBackoff: true}, fault)
		assert.Greater(t, calls, 550, "every event ran the key")
		assert.Greater(t, converged, 4*time.Minute, "the retries were spent: the key waited for its slow retry")
		t.Logf("bypass: %d Reconciles during the fault, converged %v after it", calls, converged)
	})
	synctest.Test(t, func(t *testing.T) {
		calls, converged := faultRun(t, Options[string]{EventsBypassBackoff: true, Retry: BackoffForever()}, fault)
		assert.Greater(t, calls, 550, "every event ran the key")
		assert.Greater(t, converged, 15*time.Minute, "the delay reached the limiter's 1000 s cap")
		t.Logf("bypass, retry forever: %d Reconciles during the fault, converged %v after it", calls, converged)
	})
}

// The events a held retry absorbed are its reasons: provenance says why the
// retry also covers them.
func TestAHeldRetryListsTheEventsItAbsorbed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var reasons []provenance.Reasons
		fail := true
		r := ReconcilerFunc[string](func(ctx context.Context, _ string) (Result, error) {
			mu.Lock()
			defer mu.Unlock()
			reasons = append(reasons, ReasonsFrom(ctx))
			if fail {
				fail = false
				return Result{}, errors.New("boom")
			}
			return Result{}, nil
		})
		c, err := New("held", r, Options[string]{Provenance: &Provenance{}, RateLimiter: kworkqueue.NewTypedItemFastSlowRateLimiter[string](time.Second, time.Second, 0)})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		c.Enqueue("k")
		go func() { done <- c.Run(ctx) }()
		synctest.Wait()
		for range 3 {
			c.Enqueue("k")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		cancel()
		require.NoError(t, <-done)
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, reasons, 2, "the three Enqueues ran nothing before the retry")
		assert.Equal(t, 1, reasons[1].Count(provenance.TriggerRetry))
		assert.Equal(t, 3, reasons[1].Count(provenance.TriggerManual))
	})
}

// The first event after a failure wakes a backing-off key BackoffEventWait after the failure;
// the events after it wait. A woken Reconcile that fails again is not counted: the retry stays
// due when it was, and its number is the one it had; the next event wakes the key again.
func TestBackoffEventWaitWakesTheKeyOncePerFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type call struct {
			at      time.Duration
			reasons provenance.Reasons
		}
		var mu sync.Mutex
		var calls []call
		start := time.Now()
		succeedFrom := time.Hour
		r := ReconcilerFunc[string](func(ctx context.Context, _ string) (Result, error) {
			mu.Lock()
			defer mu.Unlock()
			at := time.Since(start)
			calls = append(calls, call{at, ReasonsFrom(ctx)})
			if at >= succeedFrom {
				return Result{}, nil
			}
			return Result{}, errors.New("boom")
		})
		limiter := kworkqueue.NewTypedItemFastSlowRateLimiter[string](time.Minute, time.Minute, 0)
		c, err := New("wake", r, Options[string]{Provenance: &Provenance{}, RateLimiter: limiter, BackoffEventWait: 10 * time.Second, Logger: discard.Logger()})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		c.Enqueue("k")
		go func() { done <- c.Run(ctx) }()
		synctest.Wait() // failed at 0; retry #1 due at 60 s

		time.Sleep(2 * time.Second)
		c.Enqueue("k") // wakes the key at 10 s
		time.Sleep(time.Second)
		c.Enqueue("k") // waits with it
		time.Sleep(8 * time.Second)
		synctest.Wait() // 11 s: the woken Reconcile failed at 10 s
		time.Sleep(9 * time.Second)
		synctest.Wait() // 20 s: no event since 10 s, nothing ran
		c.Enqueue("k")  // wakes the key at 20 s, 10 s after its last failure: at once
		synctest.Wait()
		time.Sleep(45 * time.Second)
		synctest.Wait() // 65 s: the retry ran at 60 s and was counted
		mu.Lock()
		succeedFrom = 0
		mu.Unlock()
		assert.Equal(t, 2, limiter.NumRequeues("k"), "the first failure and the retry at its due time counted, not the woken ones")
		time.Sleep(2 * time.Minute)
		synctest.Wait() // retry #2 at 60 + 60 s succeeds
		cancel()
		require.NoError(t, <-done)

		mu.Lock()
		defer mu.Unlock()
		var at []time.Duration
		for _, c := range calls {
			at = append(at, c.at)
		}
		assert.Equal(t, []time.Duration{0, 10 * time.Second, 20 * time.Second, 60 * time.Second, 120 * time.Second}, at)
		assert.Equal(t, 2, calls[1].reasons.Count(provenance.TriggerManual), "the woken Reconcile lists both events")
		assert.Equal(t, 1, calls[1].reasons.Count(provenance.TriggerRetry))
		assert.Equal(t, 1, calls[3].reasons.Count(provenance.TriggerRetry), "the retry at its due time")
		assert.Equal(t, 1, calls[3].reasons.Last.Retry, "still retry #1: the woken failures were not counted")
		assert.Equal(t, 2, calls[4].reasons.Last.Retry)
		assert.Zero(t, c.Stats().Retrying, "the success cleared the key")
	})
}

func TestBackoffEventWaitOptions(t *testing.T) {
	r := ReconcilerFunc[string](func(context.Context, string) (Result, error) { return Result{}, nil })
	q := kworkqueue.NewTypedRateLimitingQueue(kworkqueue.DefaultTypedControllerRateLimiter[string]())
	defer q.ShutDown()
	for name, opts := range map[string]Options[string]{
		"with EventsBypassBackoff": {EventsBypassBackoff: true, BackoffEventWait: time.Second},
		"with a prebuilt Queue":    {Queue: q, BackoffEventWait: time.Second},
	} {
		_, err := New("bad", r, opts)
		assert.ErrorIs(t, err, ErrInvalidOptions, name)
		assert.ErrorContains(t, err, "BackoffEventWait", name)
	}
	for _, wait := range []time.Duration{-1, 0, time.Second} {
		_, err := New("fine", r, Options[string]{BackoffEventWait: wait})
		assert.NoError(t, err, "%v", wait)
	}
}
