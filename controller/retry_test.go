package controller

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	kworkqueue "k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/provenance"
)

// kv returns the value logged under key in e, and whether there was one.
func kv(e ktesting.LogEntry, key string) (any, bool) {
	for i := 0; i+1 < len(e.ParameterKVList); i += 2 {
		if e.ParameterKVList[i] == key {
			return e.ParameterKVList[i+1], true
		}
	}
	return nil, false
}

// entries returns the buffered log entries whose message contains substr.
func entries(u ktesting.Underlier, substr string) []ktesting.LogEntry {
	var out []ktesting.LogEntry
	for _, e := range logged(u) {
		if strings.Contains(e.Message, substr) {
			out = append(out, e)
		}
	}
	return out
}

// Issue 28: an always-failing key is called once plus the default 15 backoff retries, with the default
// limiter's exponential delays between calls; then, its retries exhausted, it is not dropped but
// called again every 5 minutes, each time logged with when it comes back and
// counted, until a call succeeds and forgets its failures.
func TestExhaustedKeyRetriesSlowlyUntilSuccess(t *testing.T) {
	const slowFailures = 2 // slow retries that still fail before the one that succeeds
	clk := testingclock.NewFakeClock(t0)
	s := newScript(clk, func(n int, _ string) (Result, error) {
		if n <= defaultRetry.backoff+1+slowFailures {
			return Result{}, errBoom
		}
		return Result{}, nil
	})
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	limiter := &recordingLimiter[string]{TypedRateLimiter: kworkqueue.DefaultTypedControllerRateLimiter[string]()}
	q := newSpyQueue("slow", clk, kworkqueue.TypedRateLimiter[string](limiter), m)
	c, err := New("slow", Reconciler[string](s), Options[string]{Queue: q, Metrics: m})
	require.NoError(t, err)
	ctx, logs := testLogger(t)
	stop := startController(t, ctx, c)

	c.Enqueue("k")
	s.next(t)
	for i := range defaultRetry.backoff {
		q.waitDelayed(t)
		clk.Step(5 * time.Millisecond << i)
		s.next(t)
	}
	for range slowFailures + 1 {
		q.waitDelayed(t)
		waitIdle(t, c)
		assert.Equal(t, Stats{SlowRetrying: 1}, c.Stats(), "past its retries, the key waits for its slow retry")
		assert.Equal(t, defaultRetry.backoff, q.NumRequeues("k"), "not forgotten: a failure now retries slowly again, not fast")
		assert.Equal(t, 1.0, testutil.ToFloat64(m.slowRetryKeys.WithLabelValues("slow")))
		calls := s.Calls()
		prev := calls[len(calls)-1].at
		clk.Step(defaultRetry.every)
		got := s.next(t)
		assert.Equal(t, defaultRetry.every, got.at.Sub(prev), "the slow retry comes after the slow interval")
	}
	waitIdle(t, c)
	assert.Equal(t, Stats{}, c.Stats(), "the success ended the retries")
	stop()

	assert.Len(t, s.Calls(), defaultRetry.backoff+1+slowFailures+1)
	assert.Len(t, limiter.Delays(), defaultRetry.backoff, "the slow retries bypass the rate limiter")
	assert.Equal(t, 0, q.NumRequeues("k"), "the success forgot the failures")
	ops := q.Ops()
	var slowAdds int
	for _, op := range ops {
		if op == "AddAfter(k,5m0s)" {
			slowAdds++
		}
	}
	assert.Equal(t, slowFailures+1, slowAdds, "each failure past the retries adds the key back after the slow interval: %v", ops)
	assert.Equal(t, []string{"Forget(k)", "Done(k)"}, ops[len(ops)-2:])

	assert.Equal(t, 1.0, testutil.ToFloat64(m.retriesExhausted.WithLabelValues("slow")), "exhausted once, however many slow retries follow")
	assert.Equal(t, float64(slowFailures+1), testutil.ToFloat64(m.slowRetries.WithLabelValues("slow")))
	assert.Equal(t, 0.0, testutil.ToFloat64(m.slowRetryKeys.WithLabelValues("slow")), "the success took the key off the gauge")

	lines := entries(logs, "retrying at the slow interval")
	require.Len(t, lines, slowFailures+1)
	for i, e := range lines {
		assert.ErrorIs(t, e.Err, errBoom)
		after, _ := kv(e, "retryAfter")
		assert.Equal(t, defaultRetry.every, after, "the log says when the key comes back")
		at, _ := kv(e, "retryAt")
		assert.IsType(t, time.Time{}, at)
		retries, _ := kv(e, "retries")
		assert.Equal(t, defaultRetry.backoff+i, retries)
	}
	assert.Empty(t, entries(logs, "dropping the key"), "never dropped")
}

// An event for a key waiting out its slow retry reconciles it at once; a failure then waits the
// slow interval again (the fast retries come back only after a success), and the slow retry
// already due keeps its earlier time.
func TestEventReconcilesSlowRetryingKeyAtOnce(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	s := newScript(clk, func(n int, _ string) (Result, error) {
		if n <= 3 {
			return Result{}, errBoom
		}
		return Result{}, nil
	})
	q := newSpyQueue("event", clk, kworkqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute), nil)
	c, err := New("event", Reconciler[string](s), Options[string]{Queue: q, Retry: Backoff(1, Every(time.Hour))})
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	stop := startController(t, ctx, c)

	c.Enqueue("k")
	s.next(t) // call 1 fails: retry 1 with backoff
	q.waitDelayed(t)
	clk.Step(time.Second)
	s.next(t) // call 2 fails: retries exhausted
	q.waitDelayed(t)
	waitIdle(t, c)
	require.Equal(t, 1, c.Stats().SlowRetrying)

	c.Enqueue("k")                                                                              // an event
	assert.Equal(t, t0.Add(time.Second), s.next(t).at, "reconciled at once, not an hour later") // call 3 fails
	q.waitDelayed(t)
	waitIdle(t, c)
	assert.Equal(t, Stats{SlowRetrying: 1}, c.Stats())

	clk.Step(time.Hour)
	last := s.next(t) // call 4, the slow retry scheduled by call 2, succeeds
	assert.Equal(t, t0.Add(time.Second+time.Hour), last.at)
	waitIdle(t, c)
	assert.Equal(t, Stats{}, c.Stats())
	stop()

	assert.Equal(t, []string{
		"AddRateLimited(k)", "Done(k)", // call 1
		"AddAfter(k,1h0m0s)", "Done(k)", // call 2
		"AddAfter(k,1h0m0s)", "Done(k)", // call 3: slow again, not a fast retry
		"Forget(k)", "Done(k)", // call 4
	}, q.Ops())
}

// A terminal error ends a key's slow retries, as it ends its fast ones.
func TestTerminalErrorEndsSlowRetries(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	s := newScript(clk, func(n int, _ string) (Result, error) {
		if n < 3 {
			return Result{}, errBoom
		}
		return Result{}, Terminal(errBoom)
	})
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	q := newSpyQueue("terminal-slow", clk, kworkqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute), m)
	c, err := New("terminal-slow", Reconciler[string](s), Options[string]{Queue: q, Metrics: m, Retry: Backoff(1, Every(time.Minute))})
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	stop := startController(t, ctx, c)
	c.Enqueue("k")
	s.next(t)
	q.waitDelayed(t)
	clk.Step(time.Second)
	s.next(t)
	q.waitDelayed(t)
	clk.Step(time.Minute)
	s.next(t) // terminal
	waitIdle(t, c)
	assert.Equal(t, Stats{}, c.Stats())
	assert.Equal(t, 0.0, testutil.ToFloat64(m.slowRetryKeys.WithLabelValues("terminal-slow")))
	clk.Step(time.Hour)
	waitIdle(t, c)
	stop()
	assert.Len(t, s.Calls(), 3)
	assert.Equal(t, 0, q.NumRequeues("k"))
}

// Backoff(n, GiveUp()) is the old policy, kept as an explicit choice: after n retries the key is
// logged, counted and forgotten until its next event, which starts a fresh round of retries.
func TestGiveUpDropsExhaustedKey(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	s := newScript(clk, func(int, string) (Result, error) { return Result{}, errBoom })
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	q := newSpyQueue("give-up", clk, kworkqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute), m)
	c, err := New("give-up", Reconciler[string](s), Options[string]{Queue: q, Metrics: m, Retry: Backoff(2, GiveUp())})
	require.NoError(t, err)
	ctx, logs := testLogger(t)
	stop := startController(t, ctx, c)

	c.Enqueue("k")
	s.next(t)
	for range 2 {
		q.waitDelayed(t)
		clk.Step(time.Minute)
		s.next(t)
	}
	waitIdle(t, c)
	assert.Equal(t, Stats{}, c.Stats(), "dropped: nothing pending")
	assert.Equal(t, 0, q.NumRequeues("k"), "forgotten")
	clk.Step(24 * time.Hour)
	waitIdle(t, c)
	assert.Len(t, s.Calls(), 3, "no call without an event")

	c.Enqueue("k") // the next event
	s.next(t)
	q.waitDelayed(t)
	waitIdle(t, c)
	assert.Equal(t, Stats{Retrying: 1}, c.Stats(), "the event starts a fresh round of retries")
	stop()

	assert.Len(t, entries(logs, "dropping the key until its next event"), 1)
	assert.Empty(t, entries(logs, "slow interval"))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.retriesExhausted.WithLabelValues("give-up")))
	assert.Equal(t, 0.0, testutil.ToFloat64(m.slowRetries.WithLabelValues("give-up")))
	assert.Equal(t, 0.0, testutil.ToFloat64(m.slowRetryKeys.WithLabelValues("give-up")))
}

// On the default (ctrlkit) queue a slow retry keeps the Result.Priority of the failed call, and
// with provenance its trigger is the next retry's number with the slow interval as its delay.
func TestSlowRetryKeepsPriorityAndNamesItsTrigger(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	var (
		mu     sync.Mutex
		order  []string
		last   = map[string]provenance.Trigger{}
		failed = map[string]int{}
	)
	r := ReconcilerFunc[string](func(ctx context.Context, k string) (Result, error) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, k)
		last[k] = ReasonsFrom(ctx).Last
		var prio *int
		if k == "hi" {
			prio = new(10)
		}
		if failed[k] < 2 {
			failed[k]++
			return Result{Priority: prio}, errBoom
		}
		return Result{}, nil
	})
	c, err := New("slow-prio", Reconciler[string](r), Options[string]{
		Clock: clk, Provenance: &Provenance{}, Retry: Backoff(1, Every(time.Minute)),
		RateLimiter: kworkqueue.NewTypedItemExponentialFailureRateLimiter[string](0, 0),
	})
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	stop := startController(t, ctx, c)
	c.Enqueue("lo")
	c.Enqueue("hi")
	require.Eventually(t, func() bool { return c.Stats() == Stats{SlowRetrying: 2} }, 10*time.Second, time.Millisecond)
	mu.Lock()
	order = nil
	mu.Unlock()

	clk.Step(time.Minute) // both due at once: the higher priority goes first
	require.Eventually(t, func() bool { return c.Stats() == Stats{} }, 10*time.Second, time.Millisecond)
	stop()
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"hi", "lo"}, order)
	for _, k := range []string{"hi", "lo"} {
		assert.Equal(t, provenance.Trigger{Kind: provenance.TriggerRetry, Retry: 2, After: time.Minute}, last[k], "key %s", k)
	}
}

// When Run returns, nothing is retried any more: the keys it was retrying leave Stats and the
// gauge, so a stopped controller (a standby after losing its Lease) reports none.
func TestRunReturningForgetsRetryingKeys(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	s := newScript(clk, func(int, string) (Result, error) { return Result{}, errBoom })
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	q := newSpyQueue("stopped", clk, kworkqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute), m)
	c, err := New("stopped", Reconciler[string](s), Options[string]{Queue: q, Metrics: m, Retry: Backoff(1, Every(5*time.Minute))})
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	stop := startController(t, ctx, c)
	c.Enqueue("slow")
	s.next(t)
	q.waitDelayed(t)
	clk.Step(time.Second)
	s.next(t)
	q.waitDelayed(t)
	c.Enqueue("fast")
	s.next(t)
	q.waitDelayed(t)
	waitIdle(t, c)
	require.Equal(t, Stats{Retrying: 1, SlowRetrying: 1}, c.Stats())
	require.Equal(t, 1.0, testutil.ToFloat64(m.slowRetryKeys.WithLabelValues("stopped")))

	stop()
	assert.Equal(t, Stats{}, c.Stats())
	assert.Equal(t, 0.0, testutil.ToFloat64(m.slowRetryKeys.WithLabelValues("stopped")))
}

// A controller that runs again (a Lease won back) starts its keys' retries afresh, as a
// restarted process would: the limiter it shares across Runs forgets the last term's failures,
// so a key exhausted then gets its fast retries again instead of the slow interval at once.
func TestRunAgainStartsRetriesAfresh(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	s := newScript(clk, func(int, string) (Result, error) { return Result{}, errBoom })
	c, err := New("again", Reconciler[string](s), Options[string]{Clock: clk, Retry: Backoff(1, Every(time.Hour)),
		RateLimiter: kworkqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute)})
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	stop := startController(t, ctx, c)
	c.Enqueue("k")
	s.next(t)
	require.Eventually(t, func() bool { return c.Stats().Retrying == 1 && clk.HasWaiters() }, 10*time.Second, time.Millisecond)
	clk.Step(time.Second)
	s.next(t)
	require.Eventually(t, func() bool { return c.Stats().SlowRetrying == 1 }, 10*time.Second, time.Millisecond, "exhausted after one retry")
	stop()

	stop = startController(t, ctx, c)
	require.Eventually(t, c.HasSynced, 10*time.Second, time.Millisecond, "the second Run began")
	c.Enqueue("k")
	s.next(t)
	require.Eventually(t, func() bool { st := c.Stats(); return st.Retrying == 1 && st.SlowRetrying == 0 }, 10*time.Second, time.Millisecond,
		"the new term backs off first: %+v", c.Stats())
	stop()
}

// A Reconcile failing with an API error that says when to come back (429 Too
// Many Requests with Retry-After) is retried no sooner than that, however
// short the backoff, and the retry is counted as the backoff's would be; an
// error without one keeps the exponential backoff.
func TestRetryHonoursTheAPIServersRetryAfter(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	s := newScript(clk, func(n int, _ string) (Result, error) {
		switch n {
		case 1, 2:
			return Result{}, fmt.Errorf("writing the status: %w", apierrors.NewTooManyRequests("slow down", 3))
		case 3:
			return Result{}, errBoom
		}
		return Result{}, nil
	})
	c, err := New("retry-after", Reconciler[string](s), Options[string]{Clock: clk})
	require.NoError(t, err)
	ctx, logs := testLogger(t)
	startController(t, ctx, c)

	c.Enqueue("k")
	first := s.next(t)
	for _, want := range []time.Duration{3 * time.Second, 3 * time.Second, 20 * time.Millisecond} {
		require.NoError(t, wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return clk.HasWaiters(), nil
		}), "the retry's timer")
		// A fake clock fires its due timers inside Step: the retry's is still waiting just before.
		clk.Step(want - time.Millisecond)
		require.True(t, clk.HasWaiters(), "no retry before %v", want)
		clk.Step(time.Millisecond)
		got := s.next(t)
		assert.Equal(t, want, got.at.Sub(first.at), "retry after the server's delay (or the backoff)")
		first = got
	}
	require.Len(t, entries(logs, "retrying when the API server asked"), 2)
	e := entries(logs, "retrying when the API server asked")[0]
	after, _ := kv(e, "retryAfter")
	assert.Equal(t, 3*time.Second, after)
}

// RequeueJitter stretches a RequeueAfter by the random share it draws (here
// fixed at a half of the 0.5 allowed: 25% later), never makes it sooner, and
// is refused outside [0, 1].
func TestRequeueJitter(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	s := newScript(clk, func(n int, _ string) (Result, error) {
		if n == 1 {
			return Result{RequeueAfter: 10 * time.Second}, nil
		}
		return Result{}, nil
	})
	c, err := New("jitter", Reconciler[string](s), Options[string]{Clock: clk, RequeueJitter: 0.5})
	require.NoError(t, err)
	c.random = func() float64 { return 0.5 }
	ctx, _ := testLogger(t)
	startController(t, ctx, c)

	c.Enqueue("k")
	first := s.next(t)
	require.NoError(t, wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return clk.HasWaiters(), nil
	}))
	clk.Step(12500*time.Millisecond - time.Millisecond)
	require.True(t, clk.HasWaiters(), "not back before 12.5 s")
	clk.Step(time.Millisecond)
	assert.Equal(t, 12500*time.Millisecond, s.next(t).at.Sub(first.at))

	for _, bad := range []float64{-0.1, 1.5, math.NaN()} {
		_, err := New("jitter", Reconciler[string](s), Options[string]{RequeueJitter: bad})
		assert.ErrorIs(t, err, ErrInvalidOptions, "%v", bad)
	}
}
