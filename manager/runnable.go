package manager

import (
	"context"
	"errors"
	"fmt"
	"sync"

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

// Add registers controllers (any Runnable). Names must be unique within the
// Manager (ErrDuplicateName); a GatedRunnable with a Feature needs
// Options.FeatureGate; nothing can be added once Start was called. A
// Controller built without controller.Options.Metrics reports into the
// Manager's registry: Start runs it with controller.WithMetrics.
func (m *Manager) Add(rs ...Runnable) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return fmt.Errorf("manager: adding controllers: %w", controller.ErrAlreadyStarted)
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
		m.runnables = append(m.runnables, r)
	}
	return nil
}

// goRunLocked runs r in its own goroutine, counted in runWG (and in wg when
// not nil) and listed in live while it runs. m.mu is held, so that shutdown
// (which sets stopping under m.mu before runWG.Wait) never races with the
// Add.
func (m *Manager) goRunLocked(ctx context.Context, r Runnable, wg *sync.WaitGroup) {
	m.runWG.Add(1)
	if wg != nil {
		wg.Add(1)
	}
	// Keyed by a fresh pointer: a Runnable's dynamic type need not be
	// comparable.
	key := &r
	m.live[key] = struct{}{}
	go func() {
		defer m.runWG.Done()
		if wg != nil {
			defer wg.Done()
		}
		err := r.Run(ctx)
		m.mu.Lock()
		delete(m.live, key)
		m.mu.Unlock()
		switch {
		case err != nil && errors.Is(err, context.Canceled) && ctx.Err() != nil:
			// It returned its ctx's error: stopped as asked (shutdown, or a lost Lease).
			m.log().V(2).Info("Runnable stopped with its context", "controller", r.Name())
		case err != nil:
			m.reportFatal(fmt.Errorf("controller %q: %w", r.Name(), err))
		}
	}()
}
