package controller

import (
	"fmt"
	"math"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/provenance"
)

// Limiter is a token bucket that paces the Reconciles of the controllers it
// is given to (Options.Limiters): a Reconcile starts only with a token, and
// tokens come at qps per second, up to burst saved. One Limiter shared by
// several controllers paces them together, for an external API they all
// call, say. A key without a token waits in the queue (no worker is held),
// and its wait shows in provenance (provenance.TriggerPaced) and in
// ctrlkit_controller_paced_total{controller,pace}.
type Limiter struct {
	name  string
	qps   float64
	burst float64

	mu     sync.Mutex
	tokens float64
	last   time.Time // when tokens was computed; zero before the first take
}

// NewLimiter returns a Limiter named name (its pace label in metrics)
// handing out qps tokens a second, up to burst at once. qps must be > 0 and
// burst >= 1.
func NewLimiter(name string, qps float64, burst int) (*Limiter, error) {
	switch {
	case name == "":
		return nil, &OptionsError{Field: "Limiter", Reason: "empty name"}
	case !(qps > 0) || math.IsInf(qps, 1):
		return nil, &OptionsError{Field: "Limiter", Reason: fmt.Sprintf("limiter %q: qps %v must be a positive number", name, qps)}
	case burst < 1:
		return nil, &OptionsError{Field: "Limiter", Reason: fmt.Sprintf("limiter %q: burst %d must be at least 1", name, burst)}
	}
	return &Limiter{name: name, qps: qps, burst: float64(burst), tokens: float64(burst)}, nil
}

// Name returns the limiter's name.
func (l *Limiter) Name() string { return l.name }

// take takes a token at now, going into debt when there is none, and
// returns how long until that token is due (0: at once).
func (l *Limiter) take(now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() {
		l.tokens = math.Min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.qps)
	}
	l.last = now
	l.tokens--
	if l.tokens >= 0 {
		return 0
	}
	return time.Duration(-l.tokens / l.qps * float64(time.Second))
}

// paceStep holds a key back until its pacing allows its Reconcile: a quiet
// time after its events (Options.Debounce), the minimum interval since its
// last start (Options.MinInterval) and a token of each limiter
// (Options.Limiters). A held key is queued again for when it
// is due, with its reasons carried over; it holds no worker meanwhile.
type paceStep[K comparable] struct {
	c        *Controller[K]
	clock    clock.PassiveClock
	debounce *debouncer[K] // nil without Options.Debounce
	interval time.Duration
	limiters []*Limiter
	carry    bool // provenance: a held key's reasons join the next ones

	mu       sync.Mutex
	started  map[K]time.Time // last start of each key, for the minimum interval
	sweepAt  int             // len(started) at which stale entries are dropped
	paidTill map[K]paid      // keys that took their tokens, and when those are due
	carried  map[K]provenance.Reasons
}

// paid is when the tokens a held key took are due, and the limiter that
// made it wait longest.
type paid struct {
	due  time.Time
	pace string
}

func newPaceStep[K comparable](c *Controller[K], d *debouncer[K]) *paceStep[K] {
	return &paceStep[K]{
		c: c, clock: c.clock, debounce: d, interval: c.minInterval, limiters: c.limiters, carry: c.provenance,
		started: map[K]time.Time{}, sweepAt: 1024, paidTill: map[K]paid{}, carried: map[K]provenance.Reasons{},
	}
}

func (s *paceStep[K]) enter(w *work[K]) bool {
	now := s.clock.Now()
	s.mu.Lock()
	if s.carry {
		if r, ok := s.carried[w.key]; ok {
			delete(s.carried, w.key)
			r.Merge(w.why)
			w.why = r
		}
	}
	var wait time.Duration
	pace := "" // what holds the key back
	if s.debounce != nil {
		if wait = s.debounce.take(w.key, now); wait > 0 {
			pace = "debounce"
		}
	}
	if last, ok := s.started[w.key]; ok && s.interval > 0 && wait == 0 {
		if due := last.Add(s.interval); now.Before(due) {
			wait, pace = due.Sub(now), "min-interval"
		}
	}
	if wait == 0 && len(s.limiters) > 0 {
		p, ok := s.paidTill[w.key]
		if !ok {
			// Tokens are taken once per start; a key back early (an event
			// came) waits for the ones it took.
			p.due = now
			for _, l := range s.limiters {
				if d := l.take(now); now.Add(d).After(p.due) {
					p = paid{due: now.Add(d), pace: l.name}
				}
			}
		}
		if now.Before(p.due) {
			s.paidTill[w.key] = p
			wait, pace = p.due.Sub(now), p.pace
		} else {
			delete(s.paidTill, w.key)
		}
	}
	if wait > 0 {
		if s.carry {
			s.carried[w.key] = w.why
		}
		s.mu.Unlock()
		w.logger.V(4).Info("Holding the key back: it is paced", "key", w.key, "pace", pace, "wait", wait)
		w.q.add(w.key, addSpec{trigger: provenance.Trigger{Kind: provenance.TriggerPaced, After: wait}})
		s.c.cm.paced(pace) // once queued: a test waiting for the count may then move the clock
		return false
	}
	if s.interval > 0 {
		s.started[w.key] = now
		if len(s.started) >= s.sweepAt {
			s.sweepLocked(now)
		}
	}
	s.mu.Unlock()
	return true
}

// exit forgets the start of a key that a later step held back (a write
// fence) or a panic cut short: no Reconcile ran to the end, so none should
// pace the next one.
func (s *paceStep[K]) exit(w *work[K]) {
	if w.handled || s.interval == 0 {
		return
	}
	s.mu.Lock()
	delete(s.started, w.key)
	s.mu.Unlock()
}

// sweepLocked drops the start times that hold nothing back any more, so the
// table holds about the keys started within the interval.
func (s *paceStep[K]) sweepLocked(now time.Time) {
	s.sweepAt = sweepStale(s.started, func(t time.Time) bool { return now.Sub(t) >= s.interval })
}

// sweepStale deletes the entries of m that stale reports and returns the size
// at which to sweep m next: twice what is left, and at least 1024, so that
// sweeps cost O(1) per insert however many entries stay.
func sweepStale[K comparable, V any](m map[K]V, stale func(V) bool) int {
	for k, v := range m {
		if stale(v) {
			delete(m, k)
		}
	}
	return max(2*len(m), 1024)
}
