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

// By default, events on a key that is backing off wait for its retry: a
// 60 s fault with 10 events a second costs the Reconciles of the backoff's
// own schedule, and the key converges at its next retry after the fault,
// within one doubling of the delay. With client-go's rule (EventsBypassBackoff)
// every event runs the key and its failure counts: the retries are spent in
// seconds, and the key waits out the slow interval (or, retrying forever,
// the limiter's 1000 s cap) after the fault cleared.
func TestEventsDoNotInflateTheBackoff(t *testing.T) {
	const fault = 60 * time.Second
	synctest.Test(t, func(t *testing.T) {
		calls, converged := faultRun(t, Options[string]{}, fault)
		// 5 ms doubling: the retries at 5 ms × (2^n − 1) that fall in 60 s, and the first call.
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
