package sim

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/informer"
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
}

// restart is a crash an observer saw: the process restarts onto a cache lagging at snapshot
// (nil: current) for hold.
type restart struct {
	why       string
	snapshot  *fakecluster.Snapshot
	hold      time.Duration
	resources []schema.GroupVersionResource // those that lag; none: all
}

// startProcess starts a new process; with a snapshot, its reads lag at it for hold.
func (w *world) startProcess(snapshot *fakecluster.Snapshot, hold time.Duration, resources ...schema.GroupVersionResource) error {
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
	conn.Observe(func(a clienttesting.Action, obj runtime.Object, err error) { w.observe(pr, a, obj, err) })
	conn.InterceptWatches(func(gvr schema.GroupVersionResource, inner watch.Interface) watch.Interface {
		for _, p := range w.plans {
			inner = p.watch(gvr, inner)
		}
		return inner // paced by the connection's latency
	})
	if snapshot != nil {
		catchUp := conn.Lag(snapshot, resources...)
		pr.lag.Store(true)
		w.after(hold, func() {
			w.record("process %d: its cache catches up", n) // first: what it sets off comes after
			// One resource at a time, in order, a moment apart: the informers then replay what
			// they missed in the same order in every run.
			for _, gvr := range w.resources() {
				catchUp(gvr)
				time.Sleep(10*latency + offGrid)
			}
			catchUp()
			pr.lag.Store(false)
		})
	}
	factory := informer.NewFactory(cs, informer.WithDynamicClient(conn.Dynamic()), informer.WithMetadataClient(conn.Metadata()),
		informer.WithLogger(logr.Discard()))
	pr.p = &Process{Client: cs, Dynamic: conn.Dynamic(), Metadata: conn.Metadata(), Factory: factory, Incarnation: n}
	if err := w.s.Start(pr.p); err != nil {
		return fmt.Errorf("%w: Start: %w", ErrScenario, err)
	}
	ctx, cancel := context.WithCancel(w.ctx)
	pr.cancel = cancel
	factory.Start(ctx)
	for _, c := range pr.p.controllers {
		pr.wg.Go(func() {
			if err := c.Run(ctx); err != nil && ctx.Err() == nil {
				w.problem("process %d: controller %s stopped: %v", n, c.Name(), err)
			}
		})
	}
	w.mu.Lock()
	w.proc = pr
	w.mu.Unlock()
	return nil
}

// stopProcess stops the current process, as a crash does: its requests fail from now on, its
// controllers' contexts end (no drain), and it is waited for.
func (w *world) stopProcess() {
	w.mu.Lock()
	pr := w.proc
	w.proc = nil
	w.mu.Unlock()
	if pr == nil {
		return
	}
	pr.dead.Store(true)
	pr.cancel()
	pr.p.Factory.Shutdown() // its informers stop before they retry lists on the dead connection
	pr.wg.Wait()
}

// crash asks the driver to restart the process pr (which gets no further request through);
// it runs on pr's request path.
func (w *world) crash(pr *proc, rs restart) {
	if pr == nil || !pr.dead.CompareAndSwap(false, true) {
		return
	}
	select {
	case w.restarts <- rs:
	default: // a restart is pending already
	}
}
