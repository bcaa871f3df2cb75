package controller

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// debouncer is Options.Debounce: a key's Reconcile waits until its events
// have been quiet for the quiet time, but never longer than maxWait after the
// first event it has not reconciled yet, so a key whose object never stops
// changing is still reconciled every maxWait.
//
// Events only record their time and queue the key after the quiet time; the
// queue keeps the earliest of those times, so a burst wakes the key once.
// When the key reaches the pace step, the step holds it until the burst's
// due time (due), and a key let through starts a new burst.
type debouncer[K comparable] struct {
	clock   clock.PassiveClock
	quiet   time.Duration
	maxWait time.Duration

	mu      sync.Mutex
	pending map[K]burst // keys with events not yet reconciled
	sweepAt int         // len(pending) at which bursts long over are dropped
}

// burst is the first and the last event of a key since its last Reconcile.
type burst struct{ first, last time.Time }

func newDebouncer[K comparable](clk clock.PassiveClock, quiet, maxWait time.Duration) *debouncer[K] {
	return &debouncer[K]{clock: clk, quiet: quiet, maxWait: maxWait, pending: map[K]burst{}, sweepAt: 1024}
}

// event records an event for key.
func (d *debouncer[K]) event(key K) {
	now := d.clock.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	b, ok := d.pending[key]
	if !ok {
		b.first = now
		if len(d.pending) >= d.sweepAt {
			d.sweepLocked(now)
		}
	}
	b.last = now
	d.pending[key] = b
}

// take returns how long key must still wait at now; when it need not, its
// burst ends (the Reconcile about to start sees every event so far).
func (d *debouncer[K]) take(key K, now time.Time) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, ok := d.pending[key]
	if !ok {
		return 0
	}
	due := b.last.Add(d.quiet)
	if limit := b.first.Add(d.maxWait); limit.Before(due) {
		due = limit
	}
	if now.Before(due) {
		return due.Sub(now)
	}
	delete(d.pending, key)
	return 0
}

// settling is how many keys have events not yet reconciled.
func (d *debouncer[K]) settling() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.pending)
}

// sweepLocked drops the bursts whose key would have been let through by now:
// keys a step before this one dropped (an Admission that does not own them)
// never come to take their burst.
func (d *debouncer[K]) sweepLocked(now time.Time) {
	d.sweepAt = sweepStale(d.pending, func(b burst) bool { return now.Sub(b.first) > d.maxWait+d.quiet })
}

// debounceQueue is the queue the watches of a debounced controller feed:
// each event is recorded and its key queued after the quiet time.
type debounceQueue[K comparable] struct {
	queue[K]
	d *debouncer[K]
}

func (q debounceQueue[K]) add(key K, a addSpec) {
	q.d.event(key)
	a.trigger.After = max(a.trigger.After, q.d.quiet)
	q.queue.add(key, a)
}
