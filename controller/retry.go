package controller

import (
	"maps"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
)

// DefaultSlowRetryInterval is how long a key that used up its retries waits
// before each further try (Options.SlowRetryInterval). It is shorter than the
// 1000 s cap of client-go's default limiter, so a fault fixed while the key
// waits (a permission restored, a quota raised, a webhook back) is repaired
// sooner than kube-controller-manager, which keeps backing off, would repair
// it, while a key that fails for good costs one Reconcile every 5 minutes.
const DefaultSlowRetryInterval = 5 * time.Minute

// ExhaustedPolicy is what the worker loop does with a key whose Reconcile
// failed again after its last retry (Options.MaxRetries). Its zero value is
// SlowRetry.
type ExhaustedPolicy int

const (
	// SlowRetry tries the key again every Options.SlowRetryInterval until a
	// Reconcile of it succeeds or fails terminally: a key is never stranded
	// waiting for an event that may not come, as kube-controller-manager's
	// and controller-runtime's loops, which retry forever, never strand one.
	SlowRetry ExhaustedPolicy = iota
	// GiveUp forgets the key until its next event (kube-controller-manager's
	// endpoint controllers do this after 15 retries). Choose it for
	// controllers where every fix arrives as an event of the key (a corrected
	// spec, a created dependency) and retrying without one is wasted work.
	GiveUp
)

// String returns the policy's Go name, as options errors and logs show it.
func (p ExhaustedPolicy) String() string {
	switch p {
	case SlowRetry:
		return "SlowRetry"
	case GiveUp:
		return "GiveUp"
	}
	return "ExhaustedPolicy(" + strconv.Itoa(int(p)) + ")"
}

// retry is the error policy for a failed, non-terminal Reconcile of key: back
// off through the rate limiter while retries are left, then (by default)
// come back every slowRetry, or forget the key with GiveUp. It reports
// whether it put the key back. A backing-off key is held (unless
// Options.EventsBypassBackoff): events cannot run it before its retry, so
// only retries run at their due time count.
func (c *Controller[K]) retry(logger klog.Logger, q queue[K], key K, priority *int, err error) bool {
	n := q.numRequeues(key)
	if c.maxRetries == RetryForever || n < c.maxRetries {
		if floor, ok := serverDelay(err, c.slowRetry); ok && c.prebuilt == nil {
			// The API server said when to come back (429 Too Many Requests, a server
			// timeout with Retry-After): not sooner than that, nor sooner than the
			// backoff. When counts the retry, as the queue's rate-limited add would.
			delay := max(c.limiter.When(key), floor)
			logger.Error(err, "Reconcile failed; retrying when the API server asked", "retries", n, "maxRetries", c.maxRetries, "retryAfter", delay)
			c.retries.backoff(key)
			q.add(key, addSpec{trigger: Trigger{Kind: TriggerRetry, Retry: n + 1, After: delay}, priority: priority, hold: !c.bypass})
			return true
		}
		logger.Error(err, "Reconcile failed; retrying with backoff", "retries", n, "maxRetries", c.maxRetries)
		c.retries.backoff(key)
		q.add(key, addSpec{trigger: retryTrigger(n + 1), priority: priority, rateLimited: true, hold: !c.bypass})
		return true
	}
	if c.exhausted == GiveUp {
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
	q.add(key, addSpec{trigger: Trigger{Kind: TriggerRetry, Retry: n + slow, After: c.slowRetry}, priority: priority})
	return true
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
// (their value 0) and those past their retries, with how many slow retries
// each has had. The queue does not count delayed keys (client-go's Len
// counts only ready ones), yet Stats must.
type retrySet[K comparable] struct {
	mu   sync.Mutex
	keys map[K]int
	slow int // keys with a value > 0
	// onSlow reports the number of slow-retrying keys whenever it changes
	// (the gauge); nil without metrics.
	onSlow func(int)
}

// backoff records that key is backing off through the rate limiter.
func (s *retrySet[K]) backoff(key K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = make(map[K]int)
	}
	if _, ok := s.keys[key]; !ok {
		s.keys[key] = 0
	}
}

// slowRetry records one more slow retry of key and returns how many it has
// had, this one included.
func (s *retrySet[K]) slowRetry(key K) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = make(map[K]int)
	}
	n := s.keys[key] + 1
	s.keys[key] = n
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
	n, ok := s.keys[key]
	if !ok {
		return
	}
	delete(s.keys, key)
	if n > 0 {
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
	return maps.Clone(s.keys)
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
