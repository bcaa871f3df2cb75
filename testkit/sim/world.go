package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

const (
	// quietPeriod is how long, in virtual time, every controller must stay idle for the world
	// to count as quiet.
	quietPeriod = time.Second
	// poll is the virtual time between two looks at the controllers.
	poll = 100 * time.Millisecond
	// latency is how long every request takes, in virtual time: everything a write sets off
	// (watch events, handlers, queued keys) happens before its writer goes on, so that a run
	// does not depend on how the Go scheduler interleaves goroutines.
	latency = time.Millisecond
	// offGrid shifts the faults' timers off the millisecond grid (see world.after).
	offGrid = 500 * time.Microsecond
	// leaseNamespace and leaseName name the Lease the replicas of a scenario with Replicas > 1
	// elect their leader with.
	leaseNamespace, leaseName = "kube-system", "sim"
	// runawayWrites is the least number of writes after which a run is stopped as a runaway
	// (20 times the reference's when that is more).
	runawayWrites = 500
)

// errCrashed is what a crashed process's requests get.
var errCrashed = errors.New("sim: the process crashed: connection refused")

// world is one simulated run: the cluster, the process of the moment, the faults' plans and
// what the oracles read. The driver (the bubble's root goroutine) owns it; observers, run on
// the processes' request paths, record into it under mu.
type world struct {
	s     Scenario
	ctx   context.Context
	start time.Time
	rng   *rand.Rand // the faults' draws, from the seed

	cluster *fakecluster.Cluster
	user    *User
	plans   []plan
	ref     *Result
	res     *Result

	restarts chan restart // crashes the observers ask for; the driver restarts
	gc       *collector   // the cluster's garbage collector

	mu          sync.Mutex
	procs       []*proc // by replica slot; nil while a slot's process restarts
	incarnation int
	keepSnaps   bool                    // a fault reads past states (StaleRestart)
	written     []loggedWrite           // with keepSnaps: every write, for Scenario.StaleBound
	snapshots   []*fakecluster.Snapshot // after each write of the world, oldest first, when kept
	maxWrites   int                     // the processes' writes past which the run is stopped
	runaway     atomic.Bool
	staleAction atomic.Bool // NoActionOnStaleCache found one: reported once
	created     map[string]createdObject
	timers      []*time.Timer
}

// createdObject is an object a process created, for Drift.
type createdObject struct {
	gvr       schema.GroupVersionResource
	namespace string
	name      string
	key       string
}

// run is one run of s in the caller's bubble.
func run(t *testing.T, s Scenario, seed uint64, faults []Fault, ref *Result) (*Result, error) {
	if s.Start == nil {
		return nil, fmt.Errorf("%w: no Start", ErrScenario)
	}
	deadline := s.Deadline
	if deadline <= 0 {
		deadline = DefaultDeadline
	}
	cluster, err := fakecluster.NewWithOptions(fakecluster.Options{Objects: s.Objects, Resources: s.Resources, CRDs: s.CRDs,
		Rand: rand.New(rand.NewPCG(seed, 0x5eed))})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrScenario, err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), logr.Discard()))
	defer cancel()
	w := &world{
		s: s, ctx: ctx, start: time.Now(), rng: rand.New(rand.NewPCG(seed, 0xfa17)),
		cluster: cluster, ref: ref, restarts: make(chan restart, 1), created: map[string]createdObject{},
		res: &Result{Seed: seed, changes: map[string]counts{}, touched: map[string]bool{}},
	}
	for _, f := range faults {
		w.res.Faults = append(w.res.Faults, f.String())
		p := f.plan(w.rng, ref)
		if _, ok := p.(*stalePlan); ok {
			w.keepSnaps = true
		}
		if _, ok := p.(*cutPlan); ok && s.Replicas < 2 {
			return nil, fmt.Errorf("%w: %s needs Scenario.Replicas of 2 or more (a standby to take over)", ErrScenario, f)
		}
		w.plans = append(w.plans, p)
	}
	// A controller that writes in a loop (a create whose record keeps failing) would fill the
	// world: it is stopped, and that is a finding.
	w.maxWrites = runawayWrites
	if ref != nil {
		w.maxWrites = max(runawayWrites, 20*ref.writes)
	}
	uc := cluster.Connect()
	uc.SetLatency(latency)
	uc.Observe(func(a clienttesting.Action, obj runtime.Object, err error) { w.observe(nil, "user", a, obj, err) })
	if s.GarbageCollector {
		w.gc = newCollector(w, cluster)
	}
	w.user = &User{Client: uc.Clientset(), Dynamic: uc.Dynamic(), Metadata: uc.Metadata()}
	if w.keepSnaps {
		w.snapshots = append(w.snapshots, cluster.Snapshot())
	}

	defer w.stopTimers()
	w.procs = make([]*proc, max(s.Replicas, 1))
	defer w.stopAll()
	for slot := range w.procs {
		if slot > 0 {
			// The first replica leads: it took the Lease before the others start.
			time.Sleep(time.Second)
		}
		if err := w.startProcess(slot, nil, 0); err != nil {
			return nil, err
		}
	}
	if err := w.settle(deadline, "start", false); err != nil {
		w.problem("%v", err)
	}
	for _, step := range s.Workload {
		if w.runaway.Load() {
			break
		}
		w.record("user: %s", step.Name)
		if err := step.Do(ctx, w.user); err != nil {
			w.problem("step %q failed: %v", step.Name, err)
		}
		if err := w.settle(deadline, step.Name, false); err != nil {
			w.problem("%v", err)
		}
	}
	for _, p := range w.plans {
		if p.end(w) {
			if err := w.settle(deadline, "the fault's last act", true); err != nil {
				w.problem("%v", err)
			}
		}
	}
	// Work due later (a RequeueAfter, an expiry) is not work settle waits for: the world runs
	// on for another deadline before the end state is read.
	time.Sleep(deadline)
	if err := w.settle(deadline, "the end", true); err != nil {
		w.problem("%v", err)
	}
	for _, inv := range s.Invariants {
		if err := inv.Check(ctx, w.user); err != nil {
			w.problem("invariant %q: %v", inv.Name, err)
		}
	}
	w.stopAll()
	w.res.end = normaliseEnd(cluster.Snapshot())
	for _, p := range w.plans {
		if !p.struck() {
			w.record("fault %s did not strike", p)
		}
	}
	return w.res, nil
}

// settle waits, in virtual time, until the world is quiet: every controller of the process
// idle for quietPeriod and, when final, no fault pending (held events, a lagging cache): users
// do not wait for a slow controller, the end state does. It restarts crashed processes on the
// way. An error says what was still busy at the deadline.
func (w *world) settle(deadline time.Duration, after string, final bool) error {
	start := time.Now()
	var idleSince time.Time
	for {
		synctest.Wait()
		if w.runaway.Load() {
			return nil // a problem already
		}
		select {
		case rs := <-w.restarts:
			w.stopProcess(rs.slot)
			w.record("%s", rs.why)
			if err := w.startProcess(rs.slot, rs.snapshot, rs.hold, rs.resources...); err != nil {
				return err
			}
			idleSince = time.Time{}
			continue
		default:
		}
		busy := w.busy(final)
		now := time.Now()
		switch {
		case busy != "":
			idleSince = time.Time{}
		case idleSince.IsZero():
			idleSince = now
		case now.Sub(idleSince) >= quietPeriod:
			return nil
		}
		if now.Sub(start) > deadline {
			return fmt.Errorf("not converged within %v after %q: %s", deadline, after, busy)
		}
		time.Sleep(poll)
	}
}

// busy says what keeps the world from being quiet, "" when nothing does; the faults pending
// count when final.
func (w *world) busy(final bool) string {
	w.mu.Lock()
	procs := slices.Clone(w.procs)
	w.mu.Unlock()
	var parts []string
	leaders := 0
	for _, pr := range procs {
		if pr == nil {
			return "a process restarts"
		}
		if final && pr.lag.Load() {
			return "the process's cache lags"
		}
		if !pr.leads() {
			continue // a standby: its controllers do not run
		}
		leaders++
		for _, c := range pr.p.controllers {
			st := c.Stats()
			synced := true
			if s, ok := c.(interface{ HasSynced() bool }); ok {
				synced = s.HasSynced()
			}
			if !st.Idle() || st.Retrying > 0 || st.Settling > 0 || !synced {
				parts = append(parts, fmt.Sprintf("controller %s: %d queued, %d in flight, %d retrying, %d held, synced %v",
					c.Name(), st.Queued, st.InFlight, st.Retrying, st.Fenced, synced))
			}
		}
	}
	for _, p := range w.plans {
		if b := p.busy(); final && b != "" {
			return b
		}
	}
	if leaders == 0 {
		return "no process leads"
	}
	return strings.Join(parts, "; ")
}

// observe records a request a connection served: pr is the process's, nil the users'. It runs
// on the request's path, under the connection's lock: it must not block.
func (w *world) observe(pr *proc, actor string, a clienttesting.Action, obj runtime.Object, err error) {
	verb := a.GetVerb()
	if err != nil || (verb != "create" && verb != "update" && verb != "patch" && verb != "delete" && verb != "delete-collection") {
		return
	}
	gvr, ns := a.GetResource(), a.GetNamespace()
	if bookkeeping(gvr) {
		return // Leases and Events: the trace says who leads instead
	}
	name, generateName := "", ""
	if n, ok := a.(interface{ GetName() string }); ok {
		name = n.GetName()
	}
	if obj != nil {
		if m, merr := meta.Accessor(obj); merr == nil {
			name, generateName = m.GetName(), m.GetGenerateName()
		}
	}
	what := resourceString(gvr)
	if sub := a.GetSubresource(); sub != "" {
		what += "/" + sub
	}
	var snap *fakecluster.Snapshot
	if w.keepSnaps {
		snap = w.cluster.Snapshot()
	}
	w.mu.Lock()
	key := objectKey(gvr, ns, name, generateName)
	if verb == "create" {
		if pr != nil {
			w.created[key+" "+name] = createdObject{gvr: gvr, namespace: ns, name: name, key: key}
		}
	} else if c, ok := w.created[key+" "+name]; ok || verb == "delete" {
		if ok {
			key = c.key
		} else {
			for _, c := range w.created {
				if c.gvr == gvr && c.namespace == ns && c.name == name {
					key = c.key
				}
			}
		}
	}
	who := actor
	stale := false
	var missed time.Duration // how long the process's cache has missed a write (StaleBound)
	if pr != nil {
		who = fmt.Sprintf("process %d", pr.p.Incarnation)
		if stale = pr.lag.Load(); stale {
			who += " (its cache lags)" // a write made on the word of a stale cache, or checked live
			missed = w.missedLocked(pr)
		}
		w.res.writes++
		ch := w.res.changes[key]
		switch verb {
		case "create":
			ch.creates++
		case "delete":
			ch.deletes++
		}
		w.res.changes[key] = ch
	}
	w.res.world++
	if snap != nil {
		w.snapshots = append(w.snapshots, snap)
		rv, _ := strconv.ParseInt(snap.ResourceVersion(), 10, 64)
		w.written = append(w.written, loggedWrite{at: time.Now(), gvr: gvr, rv: rv})
	}
	w.res.Trace = append(w.res.Trace, fmt.Sprintf("%9s %s: %s %s %s", w.since(), who, verb, what, nsName(ns, name)))
	procWrites, worldWrites := w.res.writes, w.res.world
	w.mu.Unlock()
	switch {
	case !stale || !w.s.NoActionOnStaleCache:
	case w.s.StaleBound == 0:
		if w.staleAction.CompareAndSwap(false, true) {
			w.problem("process %d acted while its cache lags: %s %s %s", pr.p.Incarnation, verb, what, nsName(ns, name))
		}
	case missed > w.s.StaleBound:
		if w.staleAction.CompareAndSwap(false, true) {
			w.problem("process %d acted on a cache that had missed a write for %v (bound %v): %s %s %s",
				pr.p.Incarnation, missed.Round(time.Millisecond), w.s.StaleBound, verb, what, nsName(ns, name))
		}
	}
	if pr != nil && procWrites > w.maxWrites && w.runaway.CompareAndSwap(false, true) {
		pr.dead.Store(true)
		w.problem("runaway: the processes made more than %d writes; the run was stopped", w.maxWrites)
	}
	for _, p := range w.plans {
		p.afterWrite(w, pr, procWrites, worldWrites)
	}
	if w.gc != nil {
		w.gc.schedule() // an owner gone, a dependent created for a gone owner, finalizers to act on
	}
}

// snapshotAt returns the world as it was after its i-th write (0: at the start).
func (w *world) snapshotAt(i int) *fakecluster.Snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	i = min(max(i, 0), len(w.snapshots)-1)
	return w.snapshots[i]
}

// after runs f after d of virtual time, unless the run ended first. It fires between two
// milliseconds: the controllers' timers (backoffs, requeues, request latency) fall on whole
// ones, and two timers at one instant would run in an order the scheduler picks.
func (w *world) after(d time.Duration, f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timers = append(w.timers, time.AfterFunc(d+offGrid, f))
}

func (w *world) stopTimers() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range w.timers {
		t.Stop()
	}
}

// record adds a line to the trace.
func (w *world) record(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.res.Trace = append(w.res.Trace, fmt.Sprintf("%9s ", w.since())+fmt.Sprintf(format, args...))
}

// problem adds a problem (and a line to the trace).
func (w *world) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.res.Problems = append(w.res.Problems, msg)
	w.res.Trace = append(w.res.Trace, fmt.Sprintf("%9s PROBLEM: %s", w.since(), msg))
}

// since is the virtual time since the run started, for the trace.
// loggedWrite is one write to the world, for Scenario.StaleBound.
type loggedWrite struct {
	at  time.Time
	gvr schema.GroupVersionResource
	rv  int64 // the world's resourceVersion just after it
}

// missedLocked is how long ago the first write pr's lagging cache has not seen was made (a
// write after its snapshot to a resource that lags and has not caught up yet); 0 when it has
// missed none. Called with
// w.mu held.
func (w *world) missedLocked(pr *proc) time.Duration {
	for _, lw := range w.written {
		if lw.rv > pr.lagRV && (len(pr.lagged) == 0 || pr.lagged[lw.gvr]) && !pr.caught[lw.gvr] {
			return time.Since(lw.at)
		}
	}
	return 0
}

func (w *world) since() string {
	return "+" + time.Since(w.start).Round(time.Millisecond).String()
}

// resources returns the resources the world holds objects of, sorted.
func (w *world) resources() []schema.GroupVersionResource {
	var out []schema.GroupVersionResource
	for gvr := range w.cluster.Snapshot().Objects() {
		out = append(out, gvr)
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionResource) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// processCreated returns the objects the processes created that still exist, sorted.
func (w *world) processCreated() []createdObject {
	snap := w.cluster.Snapshot().Objects()
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []createdObject
	for _, c := range w.created {
		for _, o := range snap[c.gvr] {
			if m, err := meta.Accessor(o); err == nil && m.GetNamespace() == c.namespace && m.GetName() == c.name {
				out = append(out, c)
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b createdObject) int { return strings.Compare(a.key+a.name, b.key+b.name) })
	return out
}

func resourceString(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource
	}
	return gvr.Resource + "." + gvr.Group
}

func nsName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// isNotFound reports an API NotFound, for faults acting on objects that may be gone.
func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
