package testkit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ctrlkit/ctrlkit/controller"
)

// Controller is what RunController and WaitForQuiet need of a controller. ctrlkit's
// *controller.Controller[K] satisfies it; so can a hand-written one.
type Controller interface {
	// Name identifies the controller in failure messages.
	Name() string
	// Run blocks until ctx ends, then drains and returns.
	Run(ctx context.Context) error
	// Stats reports the controller's load: WaitForQuiet waits until nothing is queued, in
	// flight or waiting out a retry backoff, and, for a controller with a HasSynced method
	// (controller.Controller has one), until its handlers have had the informers' initial lists.
	Stats() controller.Stats
}

// running is one controller started by RunController.
type running struct {
	c      Controller
	cancel context.CancelFunc
	done   chan struct{} // closed when Run has returned
	err    error         // Run's result, set before done is closed
}

func (r *running) finished() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// DefaultQuietPeriod is how long every controller must stay idle before WaitForQuiet believes
// it. Events travel from a write to the informer and into the queue asynchronously, so one idle
// reading right after a write proves little; an idle stretch of this length does.
const DefaultQuietPeriod = 100 * time.Millisecond

// RunController runs c in a goroutine until ctx ends, the returned stop is called, or the test
// ends (its cleanup stops the controller and waits for Run to return). stop cancels the
// controller, waits for Run and returns its error. An error from Run that nobody collected with
// stop fails the test at cleanup, and makes WaitForQuiet fail at once.
func (e *Env) RunController(ctx context.Context, c Controller) (stop func() error) {
	ctx, cancel := context.WithCancel(ctx)
	// The Env's own context ends with the test; a ctx the caller keeps alive must not keep the
	// controller running past it.
	stopOnEnd := context.AfterFunc(e.ctx, cancel)
	r := &running{c: c, cancel: cancel, done: make(chan struct{})}
	e.runMu.Lock()
	e.controllers = append(e.controllers, r)
	e.runMu.Unlock()
	go func() {
		defer close(r.done)
		defer stopOnEnd()
		r.err = c.Run(ctx)
	}()
	return func() error {
		e.runMu.Lock()
		for i, x := range e.controllers {
			if x == r {
				e.controllers = append(e.controllers[:i], e.controllers[i+1:]...)
				break
			}
		}
		e.runMu.Unlock()
		cancel()
		<-r.done
		return r.err
	}
}

// stopControllers cancels every controller still registered, waits for them and fails the test
// for each that returned an error.
func (e *Env) stopControllers() {
	e.runMu.Lock()
	rs := e.controllers
	e.controllers = nil
	e.runMu.Unlock()
	for _, r := range rs {
		r.cancel()
	}
	for _, r := range rs {
		<-r.done
		if r.err != nil {
			e.t.Errorf("testkit: controller %s: Run: %v", r.c.Name(), r.err)
		}
	}
}

// ErrNotQuiet is matched by the error QuietContext returns when the controllers were still busy
// at the deadline.
var ErrNotQuiet = errors.New("controllers did not become quiet")

// WaitForQuiet waits until the informers of Factory have synced and every controller started
// with RunController has been idle (empty queue, no reconcile running, no key held by a write
// fence) for DefaultQuietPeriod, failing the test after timeout with each controller's queue
// length, reconciles in flight, keys retrying and keys held, naming the held keys with their
// fences (informer, object, resourceVersion awaited, since when) and the retrying keys
// (controller.Controller's Waiting). Keys whose events are settling (Options.Debounce) count
// as work until reconciled. Keys waiting out a RequeueAfter do not count as work:
// quiet means "nothing to do right now"; keys waiting out a retry backoff do, until their
// retries are exhausted: a key then retried only at Options.Retry's Every interval
// (Stats.SlowRetrying) is as settled as it gets, as a key dropped after its retries used to be.
// Assert on the world after it instead of sleeping.
func (e *Env) WaitForQuiet(timeout time.Duration) {
	e.t.Helper()
	if err := e.QuietContext(e.ctx, timeout, DefaultQuietPeriod); err != nil {
		e.t.Fatalf("testkit: %v", err)
	}
}

// QuietContext is WaitForQuiet with a chosen quiet period, returning the error instead of
// failing the test.
func (e *Env) QuietContext(ctx context.Context, timeout, period time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := e.factory.WaitForCacheSync(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrNotQuiet, err)
	}
	const poll = 5 * time.Millisecond
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	var idleSince time.Time
	for {
		e.runMu.Lock()
		rs := append([]*running(nil), e.controllers...)
		e.runMu.Unlock()
		idle := true
		for _, r := range rs {
			if r.finished() {
				return fmt.Errorf("%w: controller %s stopped: %v", ErrNotQuiet, r.c.Name(), r.err)
			}
			if st := r.c.Stats(); !st.Idle() || st.Retrying > 0 || st.Settling > 0 {
				idle = false
			}
			// Until its handlers have received its informers' initial lists, a controller has
			// not queued what they hold: it is starting, not idle.
			if s, ok := r.c.(interface{ HasSynced() bool }); ok && !s.HasSynced() {
				idle = false
			}
		}
		now := time.Now()
		switch {
		case !idle:
			idleSince = time.Time{}
		case idleSince.IsZero():
			idleSince = now
		case now.Sub(idleSince) >= period:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w within %v: %s", ErrNotQuiet, timeout, busy(rs))
		case <-ticker.C:
		}
	}
}

// busy describes the controllers' load for a timeout message: the counts, and for a controller
// that can name them (controller.Controller's Waiting), the keys held by write fences, with
// what each fence waits for, and the keys retrying.
func busy(rs []*running) string {
	if len(rs) == 0 {
		return "no controllers running"
	}
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		st := r.c.Stats()
		part := fmt.Sprintf("%s: %d queued, %d in flight, %d retrying, %d held by write fences", r.c.Name(), st.Queued, st.InFlight, st.Retrying, st.Fenced)
		if st.Settling > 0 {
			part += fmt.Sprintf(", %d with events settling (Debounce)", st.Settling)
		}
		if w, ok := r.c.(interface{ Waiting() controller.Waiting }); ok && (st.Fenced > 0 || st.Retrying > 0) {
			part += ": " + w.Waiting().String()
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}
