package controller

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"
	kworkqueue "k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
)

// spyQueue records the calls the worker loop makes on its queue, in order.
type spyQueue[K comparable] struct {
	kworkqueue.TypedRateLimitingInterface[K]
	mu  sync.Mutex
	ops []string
	// delayed receives the key after each AddAfter/AddRateLimited returned,
	// i.e. once its ready time was taken from the clock.
	delayed chan K
	clock   *testingclock.FakeClock
	// idleWaiters is the clock's waiter count with no delayed key: the
	// queue's heartbeat ticker, plus the metrics ticker when metrics are on.
	idleWaiters int
}

// newSpyQueue builds a client-go queue on clk with limiter (the default
// controller limiter when nil) and metrics m (none when nil), wrapped in a spy.
func newSpyQueue[K comparable](name string, clk *testingclock.FakeClock, limiter kworkqueue.TypedRateLimiter[K], m *Metrics) *spyQueue[K] {
	if limiter == nil {
		limiter = kworkqueue.DefaultTypedControllerRateLimiter[K]()
	}
	cfg := kworkqueue.TypedRateLimitingQueueConfig[K]{Name: name, Clock: clk}
	if m != nil {
		cfg.MetricsProvider = m.QueueMetrics()
	}
	s := &spyQueue[K]{
		TypedRateLimitingInterface: kworkqueue.NewTypedRateLimitingQueueWithConfig(limiter, cfg),
		delayed:                    make(chan K, 1000),
		clock:                      clk,
		idleWaiters:                1,
	}
	if m != nil {
		s.idleWaiters = 2
	}
	// The metrics ticker is created by a goroutine the constructor starts.
	for clk.Waiters() < s.idleWaiters {
		runtime.Gosched()
	}
	return s
}

// waitTimer waits until the queue's delaying loop armed its timer. Stepping
// the fake clock before that would be lost: the loop arms the timer relative
// to the clock's time when it gets there.
func (s *spyQueue[K]) waitTimer(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool { return s.clock.Waiters() > s.idleWaiters }, 10*time.Second, 100*time.Microsecond,
		"the queue armed no timer")
}

// waitDelayed waits until the loop put a key back with a delay.
func (s *spyQueue[K]) waitDelayed(t *testing.T) K {
	t.Helper()
	select {
	case k := <-s.delayed:
		s.waitTimer(t)
		return k
	case <-time.After(10 * time.Second):
		t.Fatalf("no delayed add within 10s; ops: %v", s.Ops())
		return *new(K)
	}
}

func (s *spyQueue[K]) record(op string, key K, extra ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(extra) > 0 {
		s.ops = append(s.ops, fmt.Sprintf("%s(%v,%v)", op, key, extra[0]))
		return
	}
	s.ops = append(s.ops, fmt.Sprintf("%s(%v)", op, key))
}

func (s *spyQueue[K]) Ops() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ops...)
}

func (s *spyQueue[K]) Forget(key K) {
	s.record("Forget", key)
	s.TypedRateLimitingInterface.Forget(key)
}

func (s *spyQueue[K]) AddRateLimited(key K) {
	s.record("AddRateLimited", key)
	s.TypedRateLimitingInterface.AddRateLimited(key)
	s.delayed <- key
}

func (s *spyQueue[K]) AddAfter(key K, d time.Duration) {
	s.record("AddAfter", key, d)
	s.TypedRateLimitingInterface.AddAfter(key, d)
	s.delayed <- key
}

func (s *spyQueue[K]) Done(key K) {
	s.record("Done", key)
	s.TypedRateLimitingInterface.Done(key)
}

// recordingLimiter wraps a rate limiter and records each delay it hands out.
type recordingLimiter[K comparable] struct {
	kworkqueue.TypedRateLimiter[K]
	mu     sync.Mutex
	delays []time.Duration
}

func (r *recordingLimiter[K]) When(key K) time.Duration {
	d := r.TypedRateLimiter.When(key)
	r.mu.Lock()
	r.delays = append(r.delays, d)
	r.mu.Unlock()
	return d
}

func (r *recordingLimiter[K]) Delays() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.delays...)
}

// call is one observed Reconcile.
type call[K comparable] struct {
	key K
	at  time.Time // fake-clock time of the call
}

// script is a Reconciler whose answers come from a function of the call
// number (1-based); it reports each call on a channel.
type script[K comparable] struct {
	clock  *testingclock.FakeClock
	answer func(n int, key K) (Result, error)

	mu    sync.Mutex
	calls []call[K]
	ch    chan call[K]
}

func newScript[K comparable](clk *testingclock.FakeClock, answer func(n int, key K) (Result, error)) *script[K] {
	return &script[K]{clock: clk, answer: answer, ch: make(chan call[K], 1000)}
}

func (s *script[K]) Reconcile(ctx context.Context, key K) (Result, error) {
	s.mu.Lock()
	c := call[K]{key: key, at: s.clock.Now()}
	s.calls = append(s.calls, c)
	n := len(s.calls)
	s.mu.Unlock()
	s.ch <- c
	return s.answer(n, key)
}

func (s *script[K]) Calls() []call[K] {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]call[K](nil), s.calls...)
}

// next waits for the next Reconcile call.
func (s *script[K]) next(t *testing.T) call[K] {
	t.Helper()
	select {
	case c := <-s.ch:
		return c
	case <-time.After(10 * time.Second):
		t.Fatalf("no Reconcile call within 10s (calls so far: %d)", len(s.Calls()))
		return call[K]{}
	}
}

// startController runs c until the test ends and returns a function that
// stops it and waits for Run to return.
func startController[K comparable](t *testing.T, ctx context.Context, c *Controller[K]) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(10 * time.Second):
				t.Error("Run did not return within 10s of cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitIdle waits until c has nothing ready and nothing in flight, twice in a
// row (see Idle's doc).
func waitIdle[K comparable](t *testing.T, c *Controller[K]) {
	t.Helper()
	require.Eventually(t, func() bool { return c.Stats().Idle() && c.Stats().Idle() }, 10*time.Second, time.Millisecond)
}

// testLogger returns a context whose logger buffers entries for assertions.
func testLogger(t *testing.T) (context.Context, ktesting.Underlier) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(4)))
	return klog.NewContext(context.Background(), logger), logger.GetSink().(ktesting.Underlier)
}

// logged returns the messages of every buffered entry.
func logged(u ktesting.Underlier) []ktesting.LogEntry {
	return u.GetBuffer().Data()
}

func messages(u ktesting.Underlier) []string {
	var out []string
	for _, e := range logged(u) {
		out = append(out, e.Message)
	}
	return out
}

func labelsEverything() labels.Selector { return labels.Everything() }
