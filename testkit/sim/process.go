package sim

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/discard"
	"github.com/ctrlkit/ctrlkit/leaderelection"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// proc is one process: its connection and what stops it.
type proc struct {
	p      *Process
	conn   *fakecluster.Connection
	dead   atomic.Bool
	cancel context.CancelFunc
	wg     sync.WaitGroup
	lag    atomic.Bool // its cache still lags (StaleRestart)
	// lagRV and lagged are the lag's snapshot's resourceVersion and the resources that lag
	// (empty: all), for Scenario.StaleBound; set before lag.
	lagRV   int64
	lagged  map[schema.GroupVersionResource]bool
	caught  map[schema.GroupVersionResource]bool // the lagging resources caught up so far; under the world's mu
	leading atomic.Bool                          // its controllers run (always, without an election); see leads
}

// leads reports whether pr's controllers run now: its Manager's election says, else the
// simulation's.
func (pr *proc) leads() bool {
	if m := pr.p.mgr; m != nil {
		if e := m.Elector(); e != nil {
			return e.IsLeader()
		}
		return true
	}
	return pr.leading.Load()
}

// restart is a crash an observer saw: the process of replica slot restarts onto a cache
// lagging at snapshot (nil: current) for hold.
type restart struct {
	slot      int
	why       string
	snapshot  *fakecluster.Snapshot
	hold      time.Duration
	resources []schema.GroupVersionResource // those that lag; none: all
}

// startProcess starts a new process for replica slot; with a snapshot, its reads lag at it for
// hold.
func (w *world) startProcess(slot int, snapshot *fakecluster.Snapshot, hold time.Duration, resources ...schema.GroupVersionResource) error {
	w.mu.Lock()
	w.incarnation++
	n := w.incarnation
	w.mu.Unlock()
	conn := w.cluster.Connect()
	conn.SetLatency(latency)
	pr := &proc{conn: conn}
	cs := conn.Clientset()
	for _, p := range w.plans {
		p.install(w, pr)
	}
	// Prepended last, so it runs first: nothing reaches the cluster from a crashed process.
	cs.PrependReactor("*", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		if pr.dead.Load() {
			return true, nil, errCrashed
		}
		return false, nil, nil
	})
	cs.PrependWatchReactor("*", func(clienttesting.Action) (bool, watch.Interface, error) {
		if pr.dead.Load() {
			return true, nil, errCrashed
		}
		return false, nil, nil
	})
	conn.Observe(func(a clienttesting.Action, obj runtime.Object, err error) { w.observe(pr, "", a, obj, err) })
	conn.InterceptWatches(func(gvr schema.GroupVersionResource, inner watch.Interface) watch.Interface {
		for _, p := range w.plans {
			inner = p.watch(pr, gvr, inner)
		}
		return inner // paced by the connection's latency
	})
	if snapshot != nil {
		catchUp := conn.Lag(snapshot, resources...)
		pr.lagRV, _ = strconv.ParseInt(snapshot.ResourceVersion(), 10, 64)
		pr.lagged = make(map[schema.GroupVersionResource]bool, len(resources))
		pr.caught = map[schema.GroupVersionResource]bool{}
		for _, r := range resources {
			pr.lagged[r] = true
		}
		pr.lag.Store(true)
		w.after(hold, func() {
			w.record("process %d: its cache catches up", n) // first: what it sets off comes after
			// One resource at a time, in order, a moment apart: the informers then replay what
			// they missed in the same order in every run.
			for _, gvr := range w.resources() {
				catchUp(gvr)
				w.mu.Lock()
				pr.caught[gvr] = true
				w.mu.Unlock()
				time.Sleep(10*latency + offGrid)
			}
			catchUp()
			pr.lag.Store(false)
		})
	}
	factory := informer.NewFactory(cs, informer.Options{DynamicClient: conn.Dynamic(), MetadataClient: conn.Metadata(), Logger: discard.Logger()})
	pr.p = &Process{Client: cs, Dynamic: conn.Dynamic(), Metadata: conn.Metadata(), Factory: factory, Incarnation: n, Replica: slot}
	if err := w.s.Start(pr.p); err != nil {
		return fmt.Errorf("%w: Start: %w", ErrScenario, err)
	}
	ctx, cancel := context.WithCancel(w.ctx)
	pr.cancel = cancel
	factory.Start(ctx)
	switch {
	case pr.p.mgr != nil:
		pr.wg.Go(func() {
			if err := pr.p.mgr.Start(ctx); err != nil && ctx.Err() == nil {
				w.problem("process %d: the Manager stopped: %v", pr.p.Incarnation, err)
			}
		})
		if e := pr.p.mgr.Elector(); e != nil {
			pr.wg.Go(func() { w.traceLeadership(ctx, pr, e) })
		}
	case w.s.Replicas > 1:
		pr.wg.Go(func() { w.campaign(ctx, pr) })
	default:
		pr.leading.Store(true)
		w.runControllers(ctx, pr, &pr.wg)
	}
	w.mu.Lock()
	w.procs[slot] = pr
	w.mu.Unlock()
	return nil
}

// runControllers runs pr's controllers until ctx ends, in goroutines wg waits for.
func (w *world) runControllers(ctx context.Context, pr *proc, wg *sync.WaitGroup) {
	for _, c := range pr.p.controllers {
		wg.Go(func() {
			if err := c.Run(ctx); err != nil && ctx.Err() == nil {
				w.problem("process %d: controller %s stopped: %v", pr.p.Incarnation, c.Name(), err)
			}
		})
	}
}

// campaign runs pr's leader election until ctx ends: its controllers run while it leads, and
// it campaigns again after it lost the Lease, as a manager.Manager does.
func (w *world) campaign(ctx context.Context, pr *proc) {
	cfg := leaderelection.Config{Namespace: leaseNamespace, Name: leaseName, Identity: fmt.Sprintf("process-%d", pr.p.Incarnation)}
	for ctx.Err() == nil {
		err := leaderelection.Run(ctx, pr.p.Client, cfg, leaderelection.Callbacks{
			OnStartedLeading: func(lctx context.Context) {
				w.record("process %d: leads", pr.p.Incarnation)
				pr.leading.Store(true)
				var run sync.WaitGroup
				w.runControllers(lctx, pr, &run)
				run.Wait()
				pr.leading.Store(false)
			},
			OnStoppedLeading: func() {
				if ctx.Err() == nil && !pr.dead.Load() {
					w.record("process %d: lost the Lease", pr.p.Incarnation)
				}
			},
		})
		if err != nil && ctx.Err() == nil && !errors.Is(err, leaderelection.ErrLeaseLost) {
			w.problem("process %d: leader election: %v", pr.p.Incarnation, err)
			return
		}
	}
}

// traceLeadership records when the elector of pr's Manager starts and stops leading, a poll
// after it does (the simulation's own election records it as it happens).
func (w *world) traceLeadership(ctx context.Context, pr *proc, e *leaderelection.Elector) {
	led := false
	for ctx.Err() == nil {
		time.Sleep(poll)
		if leads := e.IsLeader(); leads != led && ctx.Err() == nil && !pr.dead.Load() {
			led = leads
			if leads {
				w.record("process %d: leads", pr.p.Incarnation)
			} else {
				w.record("process %d: stopped leading", pr.p.Incarnation)
			}
		}
	}
}

// stopProcess stops the process of replica slot, as a crash does: its requests fail from now
// on, its controllers' contexts end (no drain), and it is waited for.
func (w *world) stopProcess(slot int) {
	w.mu.Lock()
	pr := w.procs[slot]
	w.procs[slot] = nil
	w.mu.Unlock()
	if pr == nil {
		return
	}
	pr.dead.Store(true)
	pr.cancel()
	pr.p.Factory.Shutdown() // its informers stop before they retry lists on the dead connection
	pr.wg.Wait()
}

// stopAll stops every process.
func (w *world) stopAll() {
	for slot := range w.procs {
		w.stopProcess(slot)
	}
}

// crash asks the driver to restart the process pr (which gets no further request through);
// it runs on pr's request path.
func (w *world) crash(pr *proc, rs restart) {
	if pr == nil || !pr.dead.CompareAndSwap(false, true) {
		return
	}
	rs.slot = pr.p.Replica
	select {
	case w.restarts <- rs:
	default: // a restart is pending already
	}
}
