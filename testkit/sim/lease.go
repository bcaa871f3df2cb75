package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"
)

// errPartitioned is what a partitioned process's requests get.
var errPartitioned = errors.New("sim: the process is partitioned from the API server: connection timed out")

// LeaseStall makes the Lease requests of the leader fail for hold, from a write drawn from the
// reference run's (its k-th): its renewals time out, it gives the Lease up after its
// RenewDeadline (10 s; its controllers stop at once, a write in flight still lands), and a
// standby takes over once the Lease expires (15 s after the last renewal), on its own cache.
// Every other request of the old leader goes through. Needs Scenario.Replicas ≥ 2.
func LeaseStall(hold time.Duration) Fault { return cutFault{hold: hold, leases: true} }

// Partition cuts the leader off the API server for hold, from a write drawn from the
// reference run's (its k-th): every request of its fails and its watches end, so it loses
// the Lease as with LeaseStall, and the Reconcile it was in fails midway. When the partition
// heals its informers list again and it campaigns as a standby. Needs Scenario.Replicas ≥ 2.
func Partition(hold time.Duration) Fault { return cutFault{hold: hold} }

type cutFault struct {
	hold   time.Duration
	leases bool // only the Lease's requests (LeaseStall); else all (Partition)
}

func (f cutFault) String() string {
	if f.leases {
		return fmt.Sprintf("lease-stall-%v", f.hold)
	}
	return fmt.Sprintf("partition-%v", f.hold)
}

func (f cutFault) plan(rng *rand.Rand, ref *Result) plan {
	return &cutPlan{cutFault: f, k: drawWrite(rng, ref), cut: make(chan struct{})}
}

// cutPlan is a LeaseStall or a Partition of one run.
type cutPlan struct {
	base
	cutFault
	k int // strikes after the processes' k-th write, on the process that made it

	mu     sync.Mutex
	target *proc     // the process cut off, once struck
	until  time.Time // when the cut heals
	cut    chan struct{}
}

func (p *cutPlan) String() string {
	if p.leases {
		return fmt.Sprintf("the leader's Lease requests fail for %v after write %d", p.hold, p.k)
	}
	return fmt.Sprintf("the leader is partitioned for %v after write %d", p.hold, p.k)
}

// cutting reports whether pr's requests are cut now.
func (p *cutPlan) cutting(pr *proc) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.target == pr && time.Now().Before(p.until)
}

func (p *cutPlan) install(w *world, pr *proc) {
	cs := pr.conn.Clientset()
	cs.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if !p.cutting(pr) {
			return false, nil, nil
		}
		if p.leases {
			if a.GetResource().Resource != "leases" {
				return false, nil, nil
			}
			return true, nil, apierrors.NewTimeoutError("the Lease's etcd request timed out (sim: LeaseStall)", 1)
		}
		return true, nil, errPartitioned
	})
	if !p.leases {
		cs.PrependWatchReactor("*", func(clienttesting.Action) (bool, watch.Interface, error) {
			if p.cutting(pr) {
				return true, nil, errPartitioned
			}
			return false, nil, nil
		})
	}
}

// watch ends pr's watches when a partition cuts pr off.
func (p *cutPlan) watch(pr *proc, _ schema.GroupVersionResource, inner watch.Interface) watch.Interface {
	if p.leases {
		return inner
	}
	return newCutWatch(inner, func() bool {
		select {
		case <-p.cut:
			return p.cutting(pr)
		default:
			return false
		}
	}, p.cut)
}

func (p *cutPlan) afterWrite(w *world, pr *proc, procWrites, _ int) {
	if pr == nil || procWrites != p.k || !p.hit.CompareAndSwap(false, true) {
		return
	}
	// Off the millisecond grid, as every timer of the faults: a cut at the write's own instant
	// would race the requests and renewals due then, and runs would not replay.
	w.after(0, func() {
		p.mu.Lock()
		p.target, p.until = pr, time.Now().Add(p.hold)
		p.mu.Unlock()
		if p.leases {
			w.record("fault: process %d's Lease requests fail for %v", pr.p.Incarnation, p.hold)
		} else {
			w.record("fault: process %d is partitioned for %v", pr.p.Incarnation, p.hold)
		}
		close(p.cut)
		w.after(p.hold, func() { w.record("process %d: the cut heals", pr.p.Incarnation) })
	})
}

func (p *cutPlan) busy() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.target != nil && time.Now().Before(p.until) {
		return "the cut lasts"
	}
	return ""
}

// cutWatch forwards a watch until cut closes while cutOff says its process is cut off: then
// it ends, as a watch over a broken connection does.
type cutWatch struct {
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
	done chan struct{}
}

func newCutWatch(inner watch.Interface, cutOff func() bool, cut <-chan struct{}) *cutWatch {
	c := &cutWatch{out: make(chan watch.Event), stop: make(chan struct{}), done: make(chan struct{})}
	go c.run(inner, cutOff, cut)
	return c
}

func (c *cutWatch) run(inner watch.Interface, cutOff func() bool, cut <-chan struct{}) {
	defer close(c.done)
	defer close(c.out)
	defer inner.Stop()
	in := inner.ResultChan()
	for {
		select {
		case <-c.stop:
			return
		case <-cut:
			if cutOff() {
				return
			}
			cut = nil // another process's cut: this watch carries on
		case ev, ok := <-in:
			if !ok {
				return
			}
			if cut != nil && isClosed(cut) && cutOff() {
				// The cut and the event came at the same instant, and select picked the event:
				// the cut wins, as it would have a moment later, so that runs replay.
				return
			}
			select {
			case c.out <- ev:
			case <-c.stop:
				return
			}
		}
	}
}

func (c *cutWatch) ResultChan() <-chan watch.Event { return c.out }

func (c *cutWatch) Stop() {
	c.once.Do(func() { close(c.stop) })
	<-c.done
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
