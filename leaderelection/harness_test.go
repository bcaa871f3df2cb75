package leaderelection

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// fastConfig is the short election the real-time tests use: the engine offers no clock to
// inject, so failover takes real LeaseDurations.
func fastConfig(identity string) Config {
	return Config{
		Namespace:     "default",
		Name:          "ctrl",
		Identity:      identity,
		LeaseDuration: time.Second,
		RenewDeadline: 600 * time.Millisecond,
		RetryPeriod:   200 * time.Millisecond,
	}
}

// quietCtx carries a logger that drops the engine's chatter.
func quietCtx(parent context.Context) context.Context {
	return klog.NewContext(parent, logr.Discard())
}

// recorder collects one candidate's callbacks. Channels are buffered generously so a
// callback never blocks on a test that stopped listening.
type recorder struct {
	started    chan context.Context // OnStartedLeading's ctx, on entry
	newLeaders chan string

	mu      sync.Mutex
	nStart  int
	nStop   int
	leaders []string

	// lead, when set, runs inside OnStartedLeading; the default waits for ctx to end.
	lead func(ctx context.Context)
}

func newRecorder() *recorder {
	return &recorder{started: make(chan context.Context, 16), newLeaders: make(chan string, 64)}
}

func (r *recorder) callbacks() Callbacks {
	return Callbacks{
		OnStartedLeading: func(ctx context.Context) {
			r.mu.Lock()
			r.nStart++
			lead := r.lead
			r.mu.Unlock()
			r.started <- ctx
			if lead != nil {
				lead(ctx)
				return
			}
			<-ctx.Done()
		},
		OnStoppedLeading: func() {
			r.mu.Lock()
			r.nStop++
			r.mu.Unlock()
		},
		OnNewLeader: func(id string) {
			r.mu.Lock()
			r.leaders = append(r.leaders, id)
			r.mu.Unlock()
			r.newLeaders <- id
		},
	}
}

func (r *recorder) counts() (starts, stops int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nStart, r.nStop
}

// running is an Elector.Run in a goroutine the test owns.
type running struct {
	cancel context.CancelFunc
	done   chan error
}

func start(e *Elector) *running {
	ctx, cancel := context.WithCancel(quietCtx(context.Background()))
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- e.Run(ctx) }()
	return r
}

// stop cancels Run and returns its error.
func (r *running) stop(t testing.TB) error {
	t.Helper()
	r.cancel()
	return waitFor(t, r.done, 10*time.Second, "Run to return")
}

// waitFor receives from ch or fails the test after within.
func waitFor[T any](t testing.TB, ch <-chan T, within time.Duration, what string) T {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("timed out after %v waiting for %s", within, what)
		var zero T
		return zero
	}
}

// waitForValue receives from ch until want arrives or within passes.
func waitForValue[T comparable](t testing.TB, ch <-chan T, want T, within time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if v := waitFor(t, ch, time.Until(deadline), what); v == want {
			return
		}
	}
}
