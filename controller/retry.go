package controller

import (
	"fmt"
	"math"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/provenance"
)

// Retry is what a controller does with a key whose Reconcile failed
// (Options.Retry). Build one from Backoff, Every, BackoffForever and GiveUp,
// which compose: Backoff(n, then) retries n times through the rate limiter,
// then follows then. Every combination means something; the only errors are
// a negative count or a non-positive interval, which New reports.
//
// The zero value is the default, Backoff(15, Every(5*time.Minute)): with
// client-go's default limiter the 15th retry comes about 164 s after the
// first failure (kube-controller-manager's endpoint controllers stop there
// too), then the key is tried every 5 minutes until it succeeds, so a fault
// fixed later (a permission restored, a quota raised, a webhook back) is
// repaired without an event for the key, sooner than a backoff capped at
// 1000 s would repair it, while a key that fails for good costs one
// Reconcile every 5 minutes (Stats.SlowRetrying shows those keys).
//
// Terminal errors are never retried, whatever the policy. The backoff's count
// is the queue's NumRequeues, that is the rate limiter's per-item count: a
// limiter without per-item state (a bare bucket) reports 0 and backs off
// forever. An API error carrying a Retry-After (429, server timeouts) delays
// its backoff retry to at least that, capped at the Every interval (5
// minutes without one).
type Retry struct {
	set     bool          // built by a constructor: the zero value is the default
	backoff int           // retries through the rate limiter; -1: forever
	every   time.Duration // then a try every this long; 0: give up
	err     string        // why the policy is invalid, reported by New
}

// defaultRetry is the zero Retry's policy.
var defaultRetry = Retry{set: true, backoff: 15, every: 5 * time.Minute}

// Backoff retries a failed key n times with the rate limiter's backoff
// (Options.RateLimiter), then follows then. Backoff(n, GiveUp()) is
// kube-controller-manager's endpoint controllers' policy; Backoff(0, p) is p;
// Backoff(n, Backoff(m, p)) is Backoff(n+m, p). A zero Retry as then is the
// default: Backoff(n, Retry{}) backs off n+15 times.
func Backoff(n int, then Retry) Retry {
	then = then.resolved()
	switch {
	case n < 0:
		return Retry{set: true, err: fmt.Sprintf("Backoff(%d): a negative count of retries", n)}
	case then.err != "":
		return then
	case then.backoff < 0:
		return then
	case n > math.MaxInt32-then.backoff:
		return Retry{set: true, err: fmt.Sprintf("Backoff(%d): more retries than can be counted; use BackoffForever()", n)}
	}
	then.backoff += n
	return then
}

// Every tries a failed key again every d until a Reconcile of it succeeds or
// fails terminally. An event for the key meanwhile reconciles it at once. The
// wait is a plain delay: the rate limiter neither paces nor counts it, and a
// Retry-After from the API server does not change it. Alone, with no backoff
// before it, the first failure already counts as past the backoff (logged so,
// and in Stats.SlowRetrying and ctrlkit_controller_retries_exhausted_total).
func Every(d time.Duration) Retry {
	if d <= 0 {
		return Retry{set: true, err: fmt.Sprintf("Every(%v): the interval must be positive", d)}
	}
	return Retry{set: true, every: d}
}

// BackoffForever backs a failed key off through the rate limiter until it
// succeeds (up to the limiter's cap, 1000 s by default): controller-runtime's
// and kube-controller-manager's ReplicaSet controller's policy.
func BackoffForever() Retry { return Retry{set: true, backoff: -1} }

// GiveUp logs the error and forgets a failed key until its next event: for
// controllers where every fix arrives as an event of the key (a corrected
// spec, a created dependency). Alone, it never retries.
func GiveUp() Retry { return Retry{set: true} }

// resolved is r with the zero value read as the default.
func (r Retry) resolved() Retry {
	if !r.set {
		return defaultRetry
	}
	return r
}

// retry is the error policy for a failed, non-terminal Reconcile of key: back
// off through the rate limiter while retries are left, then come back every
// slowRetry, or forget the key when slowRetry is 0 (GiveUp). It reports
// whether it put the key back. A backing-off key is held (unless
// Options.EventsBypassBackoff): events cannot run it before its retry, so
// only retries run at their due time count; the first event after a failure
// may wake it BackoffEventWait after the failure (c.wake), and the failure of
// such an early Reconcile leaves the count and the retry's due time as they were.
func (c *Controller[K]) retry(logger klog.Logger, q queue[K], key K, priority *int, err error) bool {
	n := q.numRequeues(key)
	if c.maxRetries < 0 || n < c.maxRetries {
		floor, asked := serverDelay(err, c.retryCeiling())
		if c.wake > 0 {
			return c.heldRetry(logger, q, key, priority, err, n, floor)
		}
		if asked && c.prebuilt == nil {
			// The API server said when to come back (429 Too Many Requests, a server
			// timeout with Retry-After): not sooner than that, nor sooner than the
			// backoff. When counts the retry, as the queue's rate-limited add would.
			delay := max(c.limiter.When(key), floor)
			logger.Error(err, "Reconcile failed; retrying when the API server asked", "retries", n, "maxRetries", c.maxRetries, "retryAfter", delay)
			c.retries.backoff(key, time.Time{})
			q.add(key, addSpec{trigger: provenance.Trigger{Kind: provenance.TriggerRetry, Retry: n + 1, After: delay}, priority: priority, hold: !c.bypass})
			return true
		}
		logger.Error(err, "Reconcile failed; retrying with backoff", "retries", n, "maxRetries", c.maxRetries)
		c.retries.backoff(key, time.Time{})
		q.add(key, addSpec{trigger: retryTrigger(n + 1), priority: priority, rateLimited: true, hold: !c.bypass})
		return true
	}
	if c.slowRetry == 0 {
		c.cm.exhaustedRetries()
		logger.Error(err, "Reconcile failed too many times; dropping the key until its next event", "maxRetries", c.maxRetries)
		q.forget(key)
		c.retries.clear(key)
		return false
	}
	// The limiter's count is not reset (no Forget): NumRequeues stays at
	// maxRetries, so every later failure comes here again instead of
	// starting another round of fast retries. A success forgets it.
	slow := c.retries.slowRetry(key)
	if slow == 1 {
		c.cm.exhaustedRetries()
	}
	c.cm.slowRetried()
	logger.Error(err, "Reconcile failed after its last retry; retrying at the slow interval until it succeeds",
		"retries", n+slow-1, "maxRetries", c.maxRetries, "retryAfter", c.slowRetry, "retryAt", c.clock.Now().Add(c.slowRetry))
	q.add(key, addSpec{trigger: provenance.Trigger{Kind: provenance.TriggerRetry, Retry: n + slow, After: c.slowRetry}, priority: priority})
	return true
}

// heldRetry is retry's backoff with events that wake the key (c.wake > 0; the
// controller built the queue, so c.limiter is the queue's): the delay is taken
// from the limiter here rather than by the queue, so that the retry's due time
// is known. A failure before that time is a Reconcile an event woke early: it
// is not counted, and the retry stays due when it was (later, if the API
// server asked for a later one). floor is the API server's delay, 0 if none.
func (c *Controller[K]) heldRetry(logger klog.Logger, q queue[K], key K, priority *int, err error, n int, floor time.Duration) bool {
	now := c.clock.Now()
	add := func(retry int, delay time.Duration) {
		t := retryTrigger(retry)
		if floor > 0 {
			t.After = delay // the API server's delay shows, as on the other paths
		}
		c.retries.backoff(key, now.Add(delay))
		q.add(key, addSpec{trigger: t, backoff: delay, priority: priority, hold: true, wake: c.wake})
	}
	if due, ok := c.retries.dueAt(key); ok && now.Before(due) {
		delay := max(due.Sub(now), floor)
		logger.Error(err, "Reconcile failed ahead of its retry (an event woke the key); the retry stays due",
			"retries", n, "maxRetries", c.maxRetries, "retryAfter", delay)
		add(n, delay)
		return true
	}
	delay := max(c.limiter.When(key), floor)
	if floor > 0 {
		logger.Error(err, "Reconcile failed; retrying when the API server asked", "retries", n, "maxRetries", c.maxRetries, "retryAfter", delay)
	} else {
		logger.Error(err, "Reconcile failed; retrying with backoff", "retries", n, "maxRetries", c.maxRetries, "retryAfter", delay)
	}
	add(n+1, delay)
	return true
}

// retryCeiling is the longest a Retry-After delays a backoff retry: the slow
// retries' interval, else 5 minutes.
func (c *Controller[K]) retryCeiling() time.Duration {
	if c.slowRetry > 0 {
		return c.slowRetry
	}
	return defaultRetry.every
}

// serverDelay is the delay an API error asks for (a Retry-After, as
// apierrors.SuggestsClientDelay reads it), at most ceiling; false when it
// asks for none.
func serverDelay(err error, ceiling time.Duration) (time.Duration, bool) {
	secs, ok := apierrors.SuggestsClientDelay(err)
	if !ok || secs <= 0 {
		return 0, false
	}
	return min(time.Duration(secs)*time.Second, ceiling), true
}

// retrySet holds the keys whose last Reconcile failed: those backing off
// (slow 0) and those past their retries, with how many slow retries each has
// had. The queue does not count delayed keys (client-go's Len counts only
// ready ones), yet Stats must.
type retrySet[K comparable] struct {
	mu   sync.Mutex
	keys map[K]retryState
	slow int // keys with slow > 0
	// onSlow reports the number of slow-retrying keys whenever it changes
	// (the gauge); nil without metrics.
	onSlow func(int)
}

// retryState is what retrySet knows of one key.
type retryState struct {
	slow int       // slow retries had; 0 while backing off
	due  time.Time // when its backoff retry is due; zero when the queue's limiter chose it
}

// backoff records that key is backing off through the rate limiter, its
// retry due at due (zero: not known here).
func (s *retrySet[K]) backoff(key K, due time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = make(map[K]retryState)
	}
	if st := s.keys[key]; st.slow == 0 {
		s.keys[key] = retryState{due: due}
	}
}

// dueAt returns when key's backoff retry is due, if it backs off and that is
// known.
func (s *retrySet[K]) dueAt(key K) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.keys[key]
	return st.due, ok && st.slow == 0 && !st.due.IsZero()
}

// slowRetry records one more slow retry of key and returns how many it has
// had, this one included.
func (s *retrySet[K]) slowRetry(key K) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = make(map[K]retryState)
	}
	n := s.keys[key].slow + 1
	s.keys[key] = retryState{slow: n}
	if n == 1 {
		s.setSlowLocked(s.slow + 1)
	}
	return n
}

// clear forgets key: it succeeded, failed terminally, was given up or is not
// this member's any more.
func (s *retrySet[K]) clear(key K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.keys[key]
	if !ok {
		return
	}
	delete(s.keys, key)
	if st.slow > 0 {
		s.setSlowLocked(s.slow - 1)
	}
}

// reset forgets every key, when a Run starts or returns: no key is waiting
// in the queue of a Run that has not begun or has ended. Later changes of
// the number of slow-retrying keys go to cm's gauge.
func (s *retrySet[K]) reset(cm *controllerMetrics) {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.keys)
	s.onSlow = cm.setSlowRetryKeys
	s.setSlowLocked(0)
}

// list returns the keys with how many slow retries each has had (0: backing
// off).
func (s *retrySet[K]) list() map[K]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[K]int, len(s.keys))
	for k, st := range s.keys {
		out[k] = st.slow
	}
	return out
}

// counts returns how many keys are backing off and how many retry slowly.
func (s *retrySet[K]) counts() (backoff, slow int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys) - s.slow, s.slow
}

func (s *retrySet[K]) setSlowLocked(n int) {
	s.slow = n
	if s.onSlow != nil {
		s.onSlow(n)
	}
}
