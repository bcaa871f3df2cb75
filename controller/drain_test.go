package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// drainProbe is a Reconciler that records, for each key, what its context
// said when the Reconcile ended: it waits for release (a write in flight)
// or for its context to end, whichever is first.
type drainProbe struct {
	started chan string
	release chan struct{}

	mu    sync.Mutex
	ended map[string]error // the context's cause when the Reconcile returned; nil: alive
}

func newDrainProbe() *drainProbe {
	return &drainProbe{started: make(chan string, 10), release: make(chan struct{}), ended: map[string]error{}}
}

func (p *drainProbe) Reconcile(ctx context.Context, key string) (Result, error) {
	p.started <- key
	select {
	case <-p.release:
	case <-ctx.Done():
	}
	p.mu.Lock()
	p.ended[key] = context.Cause(ctx)
	p.mu.Unlock()
	return Result{}, ctx.Err()
}

func (p *drainProbe) result() map[string]error {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]error, len(p.ended))
	for k, v := range p.ended {
		out[k] = v
	}
	return out
}

// runProbe runs a one-worker controller over p with keys "a" then "b" queued,
// and returns once "a" is in flight, with the cancel of Run's context and the
// channel Run's error arrives on.
func runProbe(t *testing.T, p *drainProbe, drain time.Duration) (context.CancelCauseFunc, <-chan error) {
	t.Helper()
	c, err := New("drain", Reconciler[string](p), Options[string]{Workers: 1, DrainTimeout: drain})
	require.NoError(t, err)
	c.Enqueue("a")
	c.Enqueue("b")
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	require.Equal(t, "a", <-p.started)
	return cancel, done
}

// A graceful shutdown (cause ErrShutdown) leaves the Reconcile in flight its
// context: the write it is making lands. The key queued behind it does not start,
// and Run returns as soon as the one in flight did.
func TestGracefulShutdownLetsTheReconcilesInFlightFinish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newDrainProbe()
		cancel, done := runProbe(t, p, 0)
		start := time.Now()
		cancel(ErrShutdown)
		synctest.Wait()
		assert.Empty(t, p.result(), "the Reconcile in flight still runs, its context alive")
		time.Sleep(time.Second) // its write takes a while (virtual time)
		close(p.release)
		require.NoError(t, <-done)
		assert.Equal(t, time.Second, time.Since(start), "Run returned when the last Reconcile did, not at the drain timeout")
		assert.Equal(t, map[string]error{"a": nil}, p.result(), `"a" finished with its context alive; "b" never started`)
	})
}

// A Reconcile still running when the drain timeout expires is cancelled, with a cause
// that says so, and Run returns then.
func TestDrainTimeoutCancelsTheReconcilesStillInFlight(t *testing.T) {
	for name, drain := range map[string]time.Duration{"default": 0, "set": 10 * time.Second} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newDrainProbe()
				cancel, done := runProbe(t, p, drain)
				start := time.Now()
				cancel(ErrShutdown)
				require.NoError(t, <-done)
				want := drain
				if drain == 0 {
					want = DefaultDrainTimeout
				}
				assert.Equal(t, want, time.Since(start))
				cause := p.result()["a"]
				require.ErrorIs(t, cause, ErrShutdown)
				assert.Contains(t, cause.Error(), "the drain timeout ("+want.String()+") expired")
				assert.NotContains(t, p.result(), "b")
			})
		})
	}
}

// Any other end of Run's context (a lost Lease, Remove, a caller's plain cancel), and a
// graceful shutdown with a negative DrainTimeout, cancel the Reconciles in flight at
// once, with Run's cause: another replica may be acting on the same keys.
func TestOtherStopsCancelTheReconcilesInFlightAtOnce(t *testing.T) {
	errLeaseLost := errors.New("lease lost")
	for name, tc := range map[string]struct {
		cause, want error
		drain       time.Duration
	}{
		"plain cancel":              {nil, context.Canceled, 0},
		"another cause":             {errLeaseLost, errLeaseLost, 0},
		"shutdown with no draining": {ErrShutdown, ErrShutdown, -1},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newDrainProbe()
				cancel, done := runProbe(t, p, tc.drain)
				start := time.Now()
				cancel(tc.cause)
				require.NoError(t, <-done)
				assert.Zero(t, time.Since(start))
				assert.Equal(t, map[string]error{"a": tc.want}, p.result())
			})
		})
	}
}

// A Reconcile cut short by the end of its context returns what its client says, which is
// the context's cause when there is one (net/http's error for a request cancelled with a
// cause wraps the cause, not context.Canceled): whatever the cause, that is no failure of
// the key, counted or logged as one.
func TestACauseEndingTheReconcileIsNoFailure(t *testing.T) {
	for name, tc := range map[string]struct {
		cause error
		drain time.Duration
	}{
		"drain timeout": {ErrShutdown, time.Second},
		"another cause": {errors.New("lease lost"), 0},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, logs := testLogger(t)
				started := make(chan struct{})
				r := ReconcilerFunc[string](func(ctx context.Context, _ string) (Result, error) {
					close(started)
					<-ctx.Done()
					return Result{}, fmt.Errorf("updating status: Put %q: %w", "https://server/status", context.Cause(ctx))
				})
				c, err := New("cut", Reconciler[string](r), Options[string]{DrainTimeout: tc.drain})
				require.NoError(t, err)
				c.Enqueue("k")
				ctx, cancel := context.WithCancelCause(ctx)
				done := make(chan error, 1)
				go func() { done <- c.Run(ctx) }()
				<-started
				cancel(tc.cause)
				require.NoError(t, <-done)
				assert.NotContains(t, messages(logs), "Reconcile failed; retrying with backoff")
				assert.Contains(t, messages(logs), "Reconcile interrupted by shutdown; the key stays queued")
			})
		})
	}
}
