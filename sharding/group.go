package sharding

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ctrlkit/ctrlkit/informer"
)

// Runnable is what a Group runs while its process is a member: a
// controller.Controller, a Dispatcher, or anything that blocks in Run until its
// context ends and then returns once its work has stopped.
type Runnable interface {
	Run(ctx context.Context) error
}

// Group is one process's part in a ring as a single runnable, so a Manager
// (or main) runs a sharded controller with one Add: it runs the Sharder
// candidate throughout and, while the Member holds its Lease, starts the
// member's informer factory (the informers selecting the member's label),
// runs every Runnable, and stops them all before the Lease is released.
// A Group needs no leader election (NeedLeaderElection is false): every
// replica runs it. It runs once.
type Group struct {
	name      string
	member    *Member
	sharder   *Sharder
	factory   *informer.Factory
	runnables []Runnable
	started   atomic.Bool
}

// NewGroup returns the group named name (for logs and a Manager's runnable
// names). factory may be nil when the runnables start their own informers;
// otherwise it must be a factory of its own (a label-scoped informer cannot
// share a factory with an unscoped one of the same type), which the group
// shuts down when membership ends.
func NewGroup(name string, member *Member, sharder *Sharder, factory *informer.Factory, runnables ...Runnable) (*Group, error) {
	switch {
	case name == "":
		return nil, &ConfigError{Field: "name", Rule: "group name must not be empty"}
	case member == nil:
		return nil, &ConfigError{Field: "member", Rule: "member must not be nil"}
	case sharder == nil:
		return nil, &ConfigError{Field: "sharder", Rule: "sharder must not be nil"}
	}
	for i, r := range runnables {
		if r == nil {
			return nil, &ConfigError{Field: "runnables", Rule: fmt.Sprintf("runnable %d is nil", i)}
		}
	}
	return &Group{name: name, member: member, sharder: sharder, factory: factory, runnables: runnables}, nil
}

// Name is the group's name.
func (g *Group) Name() string { return g.name }

// NeedLeaderElection is false: every replica is a member of the ring.
func (g *Group) NeedLeaderElection() bool { return false }

// Member is the group's member, for probes (IsMember) and selectors.
func (g *Group) Member() *Member { return g.member }

// errGroupRunTwice is returned by a second Group.Run.
var errGroupRunTwice = errors.New("sharding: group already ran")

// Run runs the group until ctx ends, membership is lost or a runnable fails,
// and returns after everything it started has returned: nil when ctx ended,
// an error matching ErrMembershipLost when the Lease could not be renewed,
// else the first error of the sharder, the member or a runnable.
func (g *Group) Run(ctx context.Context) error {
	if !g.started.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: %s", errGroupRunTwice, g.name)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
	)
	fail := func(err error) {
		if err == nil {
			return
		}
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}
	var wg sync.WaitGroup
	wg.Go(func() { fail(g.sharder.Run(ctx)) })
	fail(g.member.Run(ctx, func(ctx context.Context) {
		if g.factory != nil {
			g.factory.Start(ctx)
			defer g.factory.Shutdown()
		}
		var inner sync.WaitGroup
		for _, r := range g.runnables {
			inner.Go(func() {
				if err := r.Run(ctx); err != nil {
					fail(fmt.Errorf("sharding: group %s: %w", g.name, err))
				}
			})
		}
		inner.Wait()
	}))
	cancel()
	wg.Wait()
	return firstErr
}
