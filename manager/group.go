package manager

import (
	"context"
	"slices"
)

// group is a set of Runnables that start and stop together, as
// controller-runtime's runnable groups are. A Manager has two: the Runnables
// every replica runs, started once by Start, and those that need leader
// election, started again in each leadership term. A Runnable added while
// its group runs starts at once; one added before, when the group starts.
// Every field is guarded by the Manager's mu.
type group struct {
	m       *Manager
	members []Runnable // registered, in Add order; disabled ones dropped at start
	// ctx is what members run under while the group runs (nil otherwise):
	// the Manager's controller context, or a leadership term's.
	ctx context.Context
	cur *groupRun // the current start; nil before the first
}

// groupRun is one start of a group: stopped is closed once it ended and
// every Run it began returned.
type groupRun struct {
	running int
	ending  bool
	stopped chan struct{}
}

func newGroup(m *Manager) *group { return &group{m: m} }

// addLocked registers r and, while the group runs, starts it unless its
// feature gate is disabled.
func (g *group) addLocked(r Runnable) {
	if g.ctx != nil && !g.m.enabled(r) {
		return
	}
	g.members = append(g.members, r)
	if g.ctx != nil {
		g.goLocked(r)
	}
}

// startLocked runs every enabled member under ctx (dropping those whose
// feature gate is disabled for good), until endLocked.
func (g *group) startLocked(ctx context.Context) {
	g.pruneLocked()
	g.ctx, g.cur = ctx, &groupRun{stopped: make(chan struct{})}
	for _, r := range g.members {
		g.goLocked(r)
	}
}

// endLocked marks the group's start over (its ctx ended or is ending): a
// Runnable added now waits for the next start. The channel it returns is
// closed once every Run of that start returned.
func (g *group) endLocked() <-chan struct{} {
	g.ctx = nil
	run := g.cur
	if run == nil { // never started: nothing runs
		run = &groupRun{stopped: make(chan struct{})}
		g.cur = run
	}
	run.ending = true
	if run.running == 0 {
		close(run.stopped)
	}
	return run.stopped
}

// pruneLocked drops the members whose feature gate is disabled, for good
// (a gate does not change while the process runs), logging each.
func (g *group) pruneLocked() {
	g.members = slices.DeleteFunc(g.members, func(r Runnable) bool { return !g.m.enabled(r) })
}

// removeLocked forgets the member named name; its Run, if any, is stopped by
// the caller (Manager.Remove).
func (g *group) removeLocked(name string) {
	g.members = slices.DeleteFunc(g.members, func(r Runnable) bool { return r.Name() == name })
}

func (g *group) goLocked(r Runnable) {
	run := g.cur
	run.running++
	g.m.goRunLocked(g.ctx, r, func() {
		run.running--
		if run.running == 0 && run.ending {
			close(run.stopped)
		}
	})
}
