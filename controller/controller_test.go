package controller

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	kworkqueue "k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var errBoom = errors.New("boom")

func TestNewRejectsBadOptions(t *testing.T) {
	ok := ReconcilerFunc[string](func(context.Context, string) (Result, error) { return Result{}, nil })
	q := kworkqueue.NewTypedRateLimitingQueue(kworkqueue.DefaultTypedControllerRateLimiter[string]())
	defer q.ShutDown()
	cases := []struct {
		name  string
		cname string
		r     Reconciler[string]
		opts  Options[string]
		field string
	}{
		{"empty name", "", ok, Options[string]{}, "name"},
		{"nil reconciler", "c", nil, Options[string]{}, "Reconciler"},
		{"negative workers", "c", ok, Options[string]{Workers: -1}, "Workers"},
		{"negative backoff count", "c", ok, Options[string]{Retry: Backoff(-3, GiveUp())}, "Retry"},
		{"zero interval", "c", ok, Options[string]{Retry: Backoff(3, Every(0))}, "Retry"},
		{"negative interval", "c", ok, Options[string]{Retry: Every(-time.Second)}, "Retry"},
		{"uncountable retries", "c", ok, Options[string]{Retry: Backoff(math.MaxInt32, Backoff(1, GiveUp()))}, "Retry"},
		{"negative timeout", "c", ok, Options[string]{ReconcileTimeout: -time.Second}, "ReconcileTimeout"},
		{"negative sync timeout", "c", ok, Options[string]{CacheSyncTimeout: -time.Second}, "CacheSyncTimeout"},
		{"queue and limiter", "c", ok, Options[string]{Queue: q, RateLimiter: kworkqueue.DefaultTypedControllerRateLimiter[string]()}, "RateLimiter"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.cname, tc.r, tc.opts)
			require.Error(t, err)
			assert.Nil(t, c)
			assert.ErrorIs(t, err, ErrInvalidOptions)
			var oe *OptionsError
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, tc.field, oe.Field)
			assert.Contains(t, err.Error(), tc.field)
		})
	}
}

func TestNewDefaults(t *testing.T) {
	c, err := New("defaults", ReconcilerFunc[Key](func(context.Context, Key) (Result, error) { return Result{}, nil }), Options[Key]{})
	require.NoError(t, err)
	assert.Equal(t, "defaults", c.Name())
	assert.Equal(t, 1, c.workers)
	assert.Equal(t, 15, c.maxRetries)
	assert.Equal(t, 5*time.Minute, c.slowRetry, "a key past its retries is retried slowly, not dropped")
	assert.True(t, c.NeedLeaderElection(), "controllers need leader election unless they opt out")

	c2, err := New("standby-safe", ReconcilerFunc[Key](func(context.Context, Key) (Result, error) { return Result{}, nil }),
		Options[Key]{NeedLeaderElection: new(false), Retry: GiveUp(), Workers: 4})
	require.NoError(t, err)
	assert.False(t, c2.NeedLeaderElection())
	assert.Equal(t, 0, c2.maxRetries)
	assert.Zero(t, c2.slowRetry, "GiveUp never retries, not even slowly")
	assert.Equal(t, 4, c2.workers)
}

func TestSuccessForgets(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	s := newScript(clk, func(int, string) (Result, error) { return Result{}, nil })
	spy := newSpyQueue[string]("success", clk, nil, nil)
	c, err := New("success", Reconciler[string](s), Options[string]{Queue: spy})
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	stop := startController(t, ctx, c)

	// A failure history exists before the success; the success must clear it.
	spy.TypedRateLimitingInterface.AddRateLimited("a")
	require.Equal(t, 1, spy.NumRequeues("a"))
	spy.waitTimer(t)
	clk.Step(time.Second)
	s.next(t)
	waitIdle(t, c)
	stop()

	assert.Equal(t, []string{"Forget(a)", "Done(a)"}, spy.Ops())
	assert.Equal(t, 0, spy.NumRequeues("a"))
	assert.Len(t, s.Calls(), 1)
}

func TestBackoffThenGiveUp(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  Options[string]
		calls int
	}{
		{"Backoff(3, GiveUp())", Options[string]{Retry: Backoff(3, GiveUp())}, 4},
		{"Backoff(1, Backoff(2, GiveUp()))", Options[string]{Retry: Backoff(1, Backoff(2, GiveUp()))}, 4},
		{"GiveUp()", Options[string]{Retry: GiveUp()}, 1},
		{"Backoff(0, GiveUp())", Options[string]{Retry: Backoff(0, GiveUp())}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(t0)
			s := newScript(clk, func(int, string) (Result, error) { return Result{}, errBoom })
			q := newSpyQueue("retries", clk, kworkqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute), nil)
			tc.opts.Queue = q
			c, err := New("retries", Reconciler[string](s), tc.opts)
			require.NoError(t, err)
			ctx, _ := testLogger(t)
			stop := startController(t, ctx, c)
			c.Enqueue("k")
			s.next(t)
			for range tc.calls - 1 {
				q.waitDelayed(t)
				clk.Step(time.Minute)
				s.next(t)
			}
			waitIdle(t, c)
			clk.Step(time.Hour)
			waitIdle(t, c)
			stop()
			assert.Len(t, s.Calls(), tc.calls)
		})
	}
}

// BackoffForever keeps retrying past the default 15 retries; the key is
// forgotten (its backoff reset) only when it finally succeeds.
func TestBackoffForever(t *testing.T) {
	const failures = 15 + 5
	clk := testingclock.NewFakeClock(t0)
	s := newScript(clk, func(n int, _ string) (Result, error) {
		if n <= failures { // n counts calls from 1
			return Result{}, errBoom
		}
		return Result{}, nil
	})
	q := newSpyQueue("forever", clk, kworkqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute), nil)
	c, err := New("forever", Reconciler[string](s), Options[string]{Queue: q, Retry: BackoffForever()})
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	stop := startController(t, ctx, c)
	c.Enqueue("k")
	s.next(t)
	for range failures {
		q.waitDelayed(t)
		clk.Step(time.Minute)
		s.next(t)
	}
	waitIdle(t, c)
	stop()
	assert.Len(t, s.Calls(), failures+1)
	assert.Equal(t, 0, q.NumRequeues("k"), "the success forgot the failures")
	assert.Zero(t, c.Stats().Retrying)

	_, err = New("bad", Reconciler[string](s), Options[string]{Retry: Backoff(-2, BackoffForever())})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	assert.ErrorContains(t, err, "Backoff(-2)")
}

func TestTerminalErrorIsNotRetried(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	s := newScript(clk, func(int, string) (Result, error) {
		return Result{Requeue: true}, fmt.Errorf("validating spec: %w", Terminal(errors.New("replicas must be >= 0")))
	})
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	spy := newSpyQueue[string]("terminal", clk, nil, m)
	c, err := New("terminal", Reconciler[string](s), Options[string]{Queue: spy, Metrics: m})
	require.NoError(t, err)
	ctx, logs := testLogger(t)
	stop := startController(t, ctx, c)
	c.Enqueue("bad")
	s.next(t)
	waitIdle(t, c)
	clk.Step(time.Hour)
	waitIdle(t, c)
	stop()

	assert.Len(t, s.Calls(), 1)
	assert.Equal(t, []string{"Forget(bad)", "Done(bad)"}, spy.Ops())
	var terminalLogs int
	for _, e := range logged(logs) {
		if strings.Contains(e.Message, "terminal") {
			terminalLogs++
			assert.True(t, IsTerminal(e.Err))
		}
	}
	assert.Equal(t, 1, terminalLogs, "a terminal error is logged once")
	assert.Equal(t, 1.0, testutil.ToFloat64(m.reconcileTotal.WithLabelValues("terminal", resultError)), "controller-runtime counts a terminal error as an error")
	assert.Equal(t, 1.0, testutil.ToFloat64(m.terminalErrors.WithLabelValues("terminal")))
	assert.Equal(t, 0.0, testutil.ToFloat64(m.retriesExhausted.WithLabelValues("terminal")), "not retried, so not given up either")
}

func TestRequeueAfterIsHonoured(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	s := newScript(clk, func(n int, _ string) (Result, error) {
		if n == 1 {
			return Result{RequeueAfter: 30 * time.Second, Requeue: true}, nil
		}
		return Result{}, nil
	})
	limiter := &recordingLimiter[string]{TypedRateLimiter: kworkqueue.DefaultTypedControllerRateLimiter[string]()}
	q := newSpyQueue("requeue-after", clk, kworkqueue.TypedRateLimiter[string](limiter), nil)
	c, err := New("requeue-after", Reconciler[string](s), Options[string]{Queue: q})
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	stop := startController(t, ctx, c)
	c.Enqueue("k")
	s.next(t)
	q.waitDelayed(t)
	clk.Step(30*time.Second - time.Nanosecond)
	waitIdle(t, c)
	assert.Len(t, s.Calls(), 1, "not due yet")
	clk.Step(time.Nanosecond)
	second := s.next(t)
	waitIdle(t, c)
	stop()
	assert.Equal(t, t0.Add(30*time.Second), second.at)
	assert.Empty(t, limiter.Delays(), "RequeueAfter wins over Requeue and bypasses the rate limiter")
}

func TestRequeueUsesRateLimiter(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	s := newScript(clk, func(n int, _ string) (Result, error) {
		return Result{Requeue: n < 3}, nil
	})
	limiter := &recordingLimiter[string]{TypedRateLimiter: kworkqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute)}
	spy := newSpyQueue("requeue", clk, kworkqueue.TypedRateLimiter[string](limiter), nil)
	c, err := New("requeue", Reconciler[string](s), Options[string]{Queue: spy})
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	stop := startController(t, ctx, c)
	c.Enqueue("k")
	s.next(t)
	for range 2 {
		spy.waitDelayed(t)
		clk.Step(time.Second)
		s.next(t)
	}
	waitIdle(t, c)
	stop()
	assert.Len(t, s.Calls(), 3)
	// Each successful pass forgets first, so the limiter restarts at its base delay.
	assert.Equal(t, []time.Duration{time.Second, time.Second}, limiter.Delays())
	assert.Equal(t, []string{
		"Forget(k)", "AddRateLimited(k)", "Done(k)",
		"Forget(k)", "AddRateLimited(k)", "Done(k)",
		"Forget(k)", "Done(k)",
	}, spy.Ops())
}

func TestErrorWithRequeueAfterIsHandledAsError(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	s := newScript(clk, func(n int, _ string) (Result, error) {
		if n == 1 {
			return Result{RequeueAfter: time.Hour}, errBoom
		}
		return Result{}, nil
	})
	limiter := &recordingLimiter[string]{TypedRateLimiter: kworkqueue.DefaultTypedControllerRateLimiter[string]()}
	q := newSpyQueue("err-and-after", clk, kworkqueue.TypedRateLimiter[string](limiter), nil)
	c, err := New("err-and-after", Reconciler[string](s), Options[string]{Queue: q})
	require.NoError(t, err)
	ctx, logs := testLogger(t)
	stop := startController(t, ctx, c)
	c.Enqueue("k")
	s.next(t)
	q.waitDelayed(t)
	clk.Step(5 * time.Millisecond)
	second := s.next(t)
	waitIdle(t, c)
	stop()
	assert.Equal(t, t0.Add(5*time.Millisecond), second.at, "backoff, not the hour asked for")
	assert.Equal(t, []time.Duration{5 * time.Millisecond}, limiter.Delays())
	var found bool
	for _, e := range logged(logs) {
		if strings.Contains(e.Message, "RequeueAfter was ignored") {
			found = true
		}
	}
	assert.True(t, found, "the log says RequeueAfter was ignored; got %q", messages(logs))
}

// Many workers, few keys, and every Reconcile enqueues its own key again: a
// key is never reconciled by two workers at once, and each enqueue made
// during a Reconcile leads to one more Reconcile after it.
func TestKeyEnqueuedDuringReconcileRunsAgainNeverConcurrently(t *testing.T) {
	const (
		workers = 16
		keys    = 4
		rounds  = 50 // reconciles per key
	)
	var (
		c        *Controller[int]
		active   [keys]atomic.Int32
		count    [keys]atomic.Int32
		overlaps atomic.Int32
		wg       sync.WaitGroup
	)
	wg.Add(keys)
	r := ReconcilerFunc[int](func(ctx context.Context, k int) (Result, error) {
		if active[k].Add(1) != 1 {
			overlaps.Add(1)
		}
		defer active[k].Add(-1)
		n := count[k].Add(1)
		if n < rounds {
			c.Enqueue(k) // while processing: marked dirty, handed out after Done
			c.Enqueue(k) // deduplicated
		} else if n == rounds {
			wg.Done()
		}
		return Result{}, nil
	})
	var err error
	c, err = New("no-overlap", Reconciler[int](r), Options[int]{Workers: workers})
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	stop := startController(t, ctx, c)
	for k := range keys {
		c.Enqueue(k)
	}
	wg.Wait()
	waitIdle(t, c)
	stop()
	assert.Zero(t, overlaps.Load(), "a key was reconciled by two workers at once")
	for k := range keys {
		assert.Equal(t, int32(rounds), count[k].Load(), "key %d", k)
	}
}

func TestPanicIsRecoveredAndRetried(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	s := newScript(clk, func(n int, _ string) (Result, error) {
		if n == 1 {
			panic("nil map")
		}
		return Result{}, nil
	})
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	q := newSpyQueue[string]("panics", clk, nil, m)
	c, err := New("panics", Reconciler[string](s), Options[string]{Queue: q, Metrics: m})
	require.NoError(t, err)
	ctx, logs := testLogger(t)
	stop := startController(t, ctx, c)
	c.Enqueue("k")
	s.next(t)
	q.waitDelayed(t)
	clk.Step(5 * time.Millisecond)
	s.next(t)
	waitIdle(t, c)
	stop()
	assert.Equal(t, 1.0, testutil.ToFloat64(m.panics.WithLabelValues("panics")))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.reconcileTotal.WithLabelValues("panics", resultError)))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.reconcileTotal.WithLabelValues("panics", resultSuccess)))
	assert.Equal(t, 0.0, testutil.ToFloat64(m.activeWorkers.WithLabelValues("panics")))
	var pe *PanicError
	for _, e := range logged(logs) {
		if errors.As(e.Err, &pe) {
			break
		}
	}
	require.NotNil(t, pe, "the panic was logged as a *PanicError")
	assert.Equal(t, "nil map", pe.Value)
	assert.Contains(t, string(pe.Stack), "controller_test.go")
}

func TestRePanicPropagatesAfterDone(t *testing.T) {
	r := ReconcilerFunc[string](func(context.Context, string) (Result, error) { panic("crash") })
	c, err := New("repanic", Reconciler[string](r), Options[string]{RePanic: true})
	require.NoError(t, err)
	c.Enqueue("k")
	q := c.start(nil)
	var recovered any
	func() {
		defer func() { recovered = recover() }()
		c.worker(context.Background(), context.Background(), q, c.pipeline(nil, nil, nil), klog.Background())
	}()
	assert.Equal(t, "crash", recovered)
	assert.Equal(t, 0, c.Stats().InFlight)
	// Done ran: the key is not stuck in processing, so it can be handed out again.
	c.Enqueue("k")
	assert.Equal(t, 1, c.Stats().Queued)
	q.shutDown()
}

func TestReconcileContextCarriesLoggerAndDeadline(t *testing.T) {
	type seen struct {
		deadline time.Time
		ok       bool
		id       types.UID
	}
	got := make(chan seen, 2)
	r := ReconcilerFunc[Key](func(ctx context.Context, k Key) (Result, error) {
		klog.FromContext(ctx).Info("reconciling")
		d, ok := ctx.Deadline()
		got <- seen{d, ok, ReconcileIDFrom(ctx)}
		return Result{}, nil
	})
	c, err := New("ctx", Reconciler[Key](r), Options[Key]{ReconcileTimeout: time.Minute})
	require.NoError(t, err)
	ctx, logs := testLogger(t)
	stop := startController(t, ctx, c)
	before := time.Now()
	c.Enqueue(Key{Namespace: "ns", Name: "a"})
	s := <-got
	waitIdle(t, c)
	c.Enqueue(Key{Namespace: "ns", Name: "a"})
	second := <-got
	waitIdle(t, c)
	stop()
	require.True(t, s.ok, "the Reconcile context has a deadline")
	assert.NotEmpty(t, s.id, "every Reconcile has an ID")
	assert.NotEqual(t, s.id, second.id, "a new one each call")
	assert.Empty(t, ReconcileIDFrom(context.Background()))
	assert.WithinRange(t, s.deadline, before.Add(time.Minute), time.Now().Add(time.Minute))
	var entry *struct{ kv []any }
	for _, e := range logged(logs) {
		if e.Message == "reconciling" && entry == nil {
			entry = &struct{ kv []any }{e.WithKVList}
		}
	}
	require.NotNil(t, entry)
	assert.Equal(t, []any{"controller", "ctx", "key", Key{Namespace: "ns", Name: "a"}, "reconcileID", s.id}, entry.kv,
		"the log line carries the reconcile's ID")
}

func TestRunWaitsForInFlightReconcile(t *testing.T) {
	started := make(chan struct{})
	var finished atomic.Bool
	r := ReconcilerFunc[string](func(ctx context.Context, _ string) (Result, error) {
		close(started)
		<-ctx.Done() // the shutdown is visible to the Reconcile
		finished.Store(true)
		return Result{}, nil
	})
	c, err := New("drain", Reconciler[string](r), Options[string]{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	c.Enqueue("k")
	<-started
	cancel()
	require.NoError(t, <-done)
	assert.True(t, finished.Load(), "Run returned before the in-flight Reconcile finished")

	// Intake is stopped: adds after Run are ignored until the next Run.
	c.Enqueue("late")
	assert.Equal(t, 0, c.Stats().Queued)
}

func TestRunFailsWhenCachesDoNotSync(t *testing.T) {
	c, err := New("nosync", ReconcilerFunc[string](func(context.Context, string) (Result, error) { return Result{}, nil }),
		Options[string]{CacheSyncTimeout: 20 * time.Millisecond})
	require.NoError(t, err)
	c.WaitFor("pods", func() bool { return false })
	err = c.Run(context.Background())
	require.Error(t, err)
	assert.ErrorIs(t, err, informer.ErrCacheSyncTimeout)
	var cse *informer.CacheSyncError
	require.ErrorAs(t, err, &cse)
	assert.Equal(t, []string{"pods"}, cse.Unsynced)
	assert.Contains(t, err.Error(), `controller "nosync"`)
}

// Options.Clock reaches the default queue: a key an hour away arrives once
// the fake clock (not the wall clock) has moved an hour.
func TestClockDrivesDefaultQueue(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	s := newScript(clk, func(int, string) (Result, error) { return Result{}, nil })
	c, err := New("clock", Reconciler[string](s), Options[string]{Clock: clk})
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	stop := startController(t, ctx, c)
	c.EnqueueAfter("k", time.Hour)
	require.Eventually(t, func() bool {
		if len(s.Calls()) > 0 {
			return true
		}
		clk.Step(time.Minute)
		return false
	}, 10*time.Second, time.Millisecond)
	stop()
	at := s.Calls()[0].at
	assert.False(t, at.Before(t0.Add(time.Hour)), "called at %v, before the hour passed", at)
}

// Result.Priority reaches the default (ctrlkit) queue: a requeue with a high
// priority is handed out before keys that were already waiting.
func TestResultPriorityIsHonoured(t *testing.T) {
	for _, tc := range []struct {
		name     string
		priority *int
		want     []string
	}{
		{"no priority: FIFO", nil, []string{"a", "b", "c", "a"}},
		{"priority 10: first", new(10), []string{"a", "a", "b", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			var (
				mu    sync.Mutex
				order []string
			)
			calls := make(chan struct{}, 10)
			r := ReconcilerFunc[string](func(_ context.Context, k string) (Result, error) {
				mu.Lock()
				order = append(order, k)
				first := len(order) == 1
				mu.Unlock()
				calls <- struct{}{}
				if first {
					<-release
					return Result{Requeue: true, Priority: tc.priority}, nil
				}
				return Result{}, nil
			})
			c, err := New("priority", Reconciler[string](r), Options[string]{
				RateLimiter: kworkqueue.NewTypedItemExponentialFailureRateLimiter[string](0, 0),
			})
			require.NoError(t, err)
			ctx, _ := testLogger(t)
			stop := startController(t, ctx, c)
			c.Enqueue("a")
			<-calls
			c.Enqueue("b")
			c.Enqueue("c")
			close(release)
			for range 3 {
				<-calls
			}
			waitIdle(t, c)
			stop()
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, tc.want, order)
		})
	}
}

// A key in error backoff is not in the queue's Len, yet work is pending:
// Retrying counts it from the failure until a success (or giving up).
func TestRetryingCountsKeysInBackoff(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	s := newScript(clk, func(n int, _ string) (Result, error) {
		if n < 3 { // calls are numbered from 1
			return Result{}, errBoom
		}
		return Result{}, nil
	})
	q := newSpyQueue("retrying", clk, kworkqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute), nil)
	c, err := New("retrying", Reconciler[string](s), Options[string]{Queue: q})
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	stop := startController(t, ctx, c)
	defer stop()

	assert.Equal(t, 0, c.Stats().Retrying)
	c.Enqueue("k")
	s.next(t) // call 0 fails
	q.waitDelayed(t)
	waitIdle(t, c)
	assert.Equal(t, 1, c.Stats().Retrying, "a key waiting out its backoff is pending work")
	assert.Equal(t, 0, c.Stats().Queued, "the queue does not count it")

	clk.Step(time.Minute)
	s.next(t) // call 1 fails again
	q.waitDelayed(t)
	waitIdle(t, c)
	assert.Equal(t, 1, c.Stats().Retrying, "counted once however often it fails")

	clk.Step(time.Minute)
	s.next(t) // call 2 succeeds
	waitIdle(t, c)
	assert.Equal(t, 0, c.Stats().Retrying, "success ends the retry")
}
