package manager

import (
	"context"
	"errors"
	"fmt"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/featuregate"
)

// Runnable is what a Manager runs: every *controller.Controller[K] is one,
// whatever its K, and so can be anything else with a lifetime (a cache
// warmer, a periodic job, a webhook server).
//
// A Runnable may also implement LeaderElectionRunnable (without it, it runs
// only on the leader, as every kube-controller-manager controller does),
// GatedRunnable (to sit behind a feature gate) and HasSynced() bool (to be
// part of /readyz once started).
type Runnable interface {
	// Name must be unique within a Manager; it names the Runnable in logs
	// and errors.
	Name() string
	// Run blocks until ctx ends (then returns nil after finishing in-flight
	// work) or fails; an error is fatal for the Manager. ctx carries the
	// Manager's logger and metrics (controller.MetricsFrom).
	Run(ctx context.Context) error
}

// LeaderElectionRunnable is a Runnable that says whether it may run only
// while this process leads. Runnables without the method need leader
// election (controller-runtime's rule too).
type LeaderElectionRunnable interface {
	NeedLeaderElection() bool
}

// GatedRunnable is a Runnable behind a feature gate: the Manager starts it
// only when Options.FeatureGate says Feature() is enabled. "" means no gate.
type GatedRunnable interface {
	Feature() featuregate.Feature
}

var (
	_ Runnable               = (*controller.Controller[controller.Key])(nil)
	_ LeaderElectionRunnable = (*controller.Controller[controller.Key])(nil)
	_ GatedRunnable          = (*controller.Controller[controller.Key])(nil)
)

// ErrDuplicateName is returned by Add for a Runnable whose name is already
// taken in that Manager.
var ErrDuplicateName = errors.New("duplicate runnable name")

func needsLeader(r Runnable) bool {
	if l, ok := r.(LeaderElectionRunnable); ok {
		return l.NeedLeaderElection()
	}
	return true
}

func featureOf(r Runnable) featuregate.Feature {
	if g, ok := r.(GatedRunnable); ok {
		return g.Feature()
	}
	return ""
}

// enabled reports whether r's feature gate (if any) lets it run, logging
// the ones it keeps from running.
func (m *Manager) enabled(r Runnable) bool {
	if f := featureOf(r); f != "" && !m.gate.Enabled(f) {
		m.log().Info("Not starting controller: its feature gate is disabled", "controller", r.Name(), "feature", f)
		return false
	}
	return true
}

// groupOf is the group r runs in: the leaders' when it needs leader
// election and the Manager has an election, else every replica's.
func (m *Manager) groupOf(r Runnable) *group {
	if m.elector != nil && needsLeader(r) {
		return m.leaders
	}
	return m.always
}

// ErrUnknownRunnable is returned by Remove for a name the Manager does not
// run.
var ErrUnknownRunnable = errors.New("no such runnable")

// Add registers controllers (any Runnable). Names must be unique within the
// Manager (ErrDuplicateName); a GatedRunnable with a Feature needs
// Options.FeatureGate. A Controller built without controller.Options.Metrics
// reports into the Manager's registry: Start runs it with
// controller.WithMetrics.
//
// Added after Start, a Runnable starts at once: on every replica, or, when
// it needs leader election, while this process leads (at once if it does
// now, else when it wins the Lease). Once Start is shutting down, Add
// returns an error matching ErrAlreadyStarted. Remove stops one.
func (m *Manager) Add(rs ...Runnable) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopping {
		return fmt.Errorf("manager: adding controllers: %w: the manager is shutting down", ErrAlreadyStarted)
	}
	seen := map[string]struct{}{}
	for i, r := range rs {
		if r == nil {
			return &OptionsError{Field: "Manager.Add", Reason: fmt.Sprintf("controller %d is nil", i)}
		}
		name := r.Name()
		if _, dup := m.names[name]; dup {
			return fmt.Errorf("manager: %w %q", ErrDuplicateName, name)
		}
		if _, dup := seen[name]; dup {
			return fmt.Errorf("manager: %w %q", ErrDuplicateName, name)
		}
		seen[name] = struct{}{}
		if f := featureOf(r); f != "" && m.gate == nil {
			return &OptionsError{Runnable: name, Field: "Feature",
				Reason: fmt.Sprintf("%q is set but manager.Options.FeatureGate is nil", f)}
		}
	}
	for _, r := range rs {
		m.names[r.Name()] = struct{}{}
		m.groupOf(r).addLocked(r)
	}
	return nil
}

// Remove stops the Runnable named name, if it runs, waits until its Run
// returned or ctx ends, and forgets it: it does not run again (in a later
// leader term either), and its name may be added again. A controller stops
// as when the Manager stops: no new keys, in-flight Reconciles finish. It
// returns an error matching ErrUnknownRunnable for a name the Manager does
// not have, and ctx's error (wrapped) when ctx ended first; the Runnable is
// forgotten either way. The ring's own Runnable (Options.Sharding) cannot be
// removed.
func (m *Manager) Remove(ctx context.Context, name string) error {
	m.mu.Lock()
	if _, ok := m.names[name]; !ok || (m.shard != nil && name == m.shard.name) {
		m.mu.Unlock()
		return fmt.Errorf("manager: removing %q: %w", name, ErrUnknownRunnable)
	}
	delete(m.names, name)
	m.always.removeLocked(name)
	m.leaders.removeLocked(name)
	run := m.runs[name]
	m.mu.Unlock()
	if run == nil {
		return nil
	}
	run.cancel()
	select {
	case <-run.done:
		m.log().Info("Removed a controller", "controller", name)
		return nil
	case <-ctx.Done():
		return fmt.Errorf("manager: removing %q: waiting for it to stop: %w", name, ctx.Err())
	}
}

// running is one Run of a Runnable in progress.
type running struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// goRunLocked runs r in its own goroutine, with a context of its own under
// ctx (Remove cancels it), counted in runWG and listed in live while it
// runs; onReturn, when not nil, is called with m.mu held once it returned.
// m.mu is held, so that shutdown (which sets stopping under m.mu before
// runWG.Wait) never races with the Add.
func (m *Manager) goRunLocked(ctx context.Context, r Runnable, onReturn func()) {
	m.runWG.Add(1)
	// Keyed by a fresh pointer: a Runnable's dynamic type need not be
	// comparable.
	key := &r
	ctx, cancel := context.WithCancel(ctx)
	m.live[key] = ctx
	run := &running{cancel: cancel, done: make(chan struct{})}
	m.runs[r.Name()] = run
	go func() {
		defer m.runWG.Done()
		defer close(run.done)
		defer cancel()
		err := r.Run(ctx)
		m.mu.Lock()
		delete(m.live, key)
		if m.runs[r.Name()] == run {
			delete(m.runs, r.Name())
		}
		if onReturn != nil {
			onReturn()
		}
		m.mu.Unlock()
		switch {
		case err != nil && errors.Is(err, context.Canceled) && ctx.Err() != nil:
			// It returned its ctx's error: stopped as asked (shutdown, a lost Lease, Remove).
			m.log().V(2).Info("Runnable stopped with its context", "controller", r.Name())
		case err != nil:
			m.reportFatal(fmt.Errorf("controller %q: %w", r.Name(), err))
		}
	}()
}
