package sim

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// Fault is one perturbation of a run, its parameters drawn from the run's seed (and the
// reference run: how many writes there are to crash after). Each is one line to enable:
// Check(t, s, sim.Crash(), sim.StaleRestart(30*time.Second), ...).
type Fault interface {
	// String names the fault, as the subtests do.
	String() string
	plan(rng *rand.Rand, ref *Result) plan
}

// plan is a fault drawn for one run.
type plan interface {
	fmt.Stringer
	// install prepares a new process before it starts (reactors).
	install(w *world, pr *proc)
	// watch returns the watch of gvr the process pr gets in place of inner (inner itself when
	// the fault leaves its watches alone).
	watch(pr *proc, gvr schema.GroupVersionResource, inner watch.Interface) watch.Interface
	// afterWrite is called after each successful write of the world, by pr (nil: a user), with
	// the processes' and the world's write counts so far. It runs on the request's path: it
	// must not block.
	afterWrite(w *world, pr *proc, procWrites, worldWrites int)
	// end acts once the workload is done and the world quiet; true when it did.
	end(w *world) bool
	// busy says what of the fault is still pending, "" when nothing is.
	busy() string
	// struck reports whether the fault happened in the run.
	struck() bool
}

// base is what a plan that needs no hook leaves out.
type base struct{ hit atomic.Bool }

func (*base) install(*world, *proc) {}
func (*base) watch(_ *proc, _ schema.GroupVersionResource, inner watch.Interface) watch.Interface {
	return inner
}
func (*base) afterWrite(*world, *proc, int, int)     {}
func (*base) end(*world) bool                        { return false }
func (*base) busy() string                           { return "" }
func (b *base) struck() bool                         { return b.hit.Load() }
func drawWrite(rng *rand.Rand, ref *Result) int      { return 1 + rng.IntN(max(refWrites(ref), 1)) }
func drawWorldWrite(rng *rand.Rand, ref *Result) int { return 1 + rng.IntN(max(refWorld(ref), 1)) }

func refWrites(ref *Result) int {
	if ref == nil {
		return 1
	}
	return ref.writes
}

func refWorld(ref *Result) int {
	if ref == nil {
		return 1
	}
	return ref.world
}

// Crash crashes the controller's process right after its k-th successful write (k drawn from
// the seed among the writes of the run without faults) and starts a new one with an empty
// cache: the intermediate states a reconcile that writes more than once leaves behind (Sieve's
// intermediate-state bugs).
func Crash() Fault { return crashFault{} }

type crashFault struct{}

func (crashFault) String() string { return "crash" }
func (crashFault) plan(rng *rand.Rand, ref *Result) plan {
	return &crashPlan{k: drawWrite(rng, ref)}
}

type crashPlan struct {
	base
	k int
}

func (p *crashPlan) String() string { return fmt.Sprintf("crash after write %d", p.k) }
func (p *crashPlan) afterWrite(w *world, pr *proc, procWrites, _ int) {
	if pr != nil && procWrites == p.k && p.hit.CompareAndSwap(false, true) {
		w.crash(pr, restart{why: fmt.Sprintf("fault: process %d crashes after its write %d; a new process starts with an empty cache", pr.p.Incarnation, p.k)})
	}
}

// StaleRestart crashes the controller's process after its k-th write and starts a new one
// whose cache reads the world as it was after the world's j-th write (j ≤ the writes so far,
// both drawn from the seed) for hold of virtual time before it catches up: a restart onto a
// lagging API server (Sieve's time-travel, the stale-state bugs). Quorum reads (a Get or List
// with no resourceVersion) and writes reach the current state, as on a real lagging server.
func StaleRestart(hold time.Duration) Fault { return staleFault{hold: hold} }

type staleFault struct{ hold time.Duration }

func (f staleFault) String() string { return fmt.Sprintf("stale-restart-%v", f.hold) }
func (f staleFault) plan(rng *rand.Rand, ref *Result) plan {
	return &stalePlan{k: drawWrite(rng, ref), frac: rng.Float64(), pick: rng.Float64(), hold: f.hold}
}

type stalePlan struct {
	base
	k    int
	frac float64 // which of the world's past states the new cache reads
	pick float64 // which resource lags, or all of them
	hold time.Duration
}

func (p *stalePlan) String() string { return fmt.Sprintf("stale restart after write %d", p.k) }
func (p *stalePlan) afterWrite(w *world, pr *proc, procWrites, worldWrites int) {
	if pr == nil || procWrites != p.k || !p.hit.CompareAndSwap(false, true) {
		return
	}
	j := int(p.frac * float64(worldWrites))
	snap := w.snapshotAt(j)
	// One resource lags (its watch cache is behind; the others are current), or all of them
	// (the whole server is behind): the choice among the resources the world holds now.
	present := w.resources()
	var lagged []schema.GroupVersionResource
	which := "every resource"
	if i := int(p.pick * float64(len(present)+1)); i < len(present) {
		lagged, which = present[i:i+1], resourceString(present[i])
	}
	w.crash(pr, restart{
		why: fmt.Sprintf("fault: process %d crashes after its write %d; a new process starts with %s lagging at the world's write %d of %d (resourceVersion %s) for %v",
			pr.p.Incarnation, p.k, which, j, worldWrites, snap.ResourceVersion(), p.hold),
		snapshot: snap, hold: p.hold, resources: lagged,
	})
}
