package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"
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
	// watch returns the watch of gvr the process gets in place of inner (inner itself when the
	// fault leaves its watches alone).
	watch(gvr schema.GroupVersionResource, inner watch.Interface) watch.Interface
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
func (*base) watch(_ schema.GroupVersionResource, inner watch.Interface) watch.Interface {
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

// MergeEvents holds the controller's watch events from the world's m-th write (drawn from the
// seed) for hold of virtual time, then delivers each object's events merged into one: the
// controller never sees the states in between (Sieve's unobserved-state bugs), as when it is
// slow, paused, or its watch cache coalesces.
func MergeEvents(hold time.Duration) Fault { return windowFault{hold: hold} }

// Relist holds the controller's watch events from the world's m-th write for hold of virtual
// time, then ends its watches with 410 Gone: its informers list again, and an object deleted
// meanwhile reaches the handlers as a tombstone (cache.DeletedFinalStateUnknown) instead of
// its last state.
func Relist(hold time.Duration) Fault { return windowFault{hold: hold, relist: true} }

type windowFault struct {
	hold   time.Duration
	relist bool
}

func (f windowFault) String() string {
	if f.relist {
		return fmt.Sprintf("relist-%v", f.hold)
	}
	return fmt.Sprintf("merge-events-%v", f.hold)
}

func (f windowFault) plan(rng *rand.Rand, ref *Result) plan {
	return &windowPlan{m: drawWorldWrite(rng, ref), pick: rng.Float64(), hold: f.hold, relist: f.relist}
}

// windowPlan holds the process's watch events for a while: those of every resource (merged
// when released), or of one resource drawn from the seed (Relist, whose watches then end).
type windowPlan struct {
	base
	m      int
	pick   float64 // Relist's resource, among those the world holds when the window opens
	hold   time.Duration
	relist bool

	mu       sync.Mutex
	open     bool
	from     int64                    // the resourceVersion it opened at: later events are held
	only     string                   // the resource held (Relist); "" for all
	released map[string]chan struct{} // by resource, closed when its held events go
	ended    int                      // watches ended with 410 Gone whose informers have not watched again
}

func (p *windowPlan) String() string {
	if p.relist {
		return fmt.Sprintf("relist after the world's write %d", p.m)
	}
	return fmt.Sprintf("merged events after the world's write %d", p.m)
}

// holding returns the channel a watch of gvr holds obj's event until, nil when it does not hold
// it: the window is closed, another resource's, or obj was written before it opened.
func (p *windowPlan) holding(gvr string, obj runtime.Object) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.open || (p.only != "" && gvr != p.only) {
		return nil
	}
	if m, err := meta.Accessor(obj); err == nil {
		if rv, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64); err == nil && rv <= p.from {
			return nil // written before the window opened; its event raced the opening
		}
	}
	ch, ok := p.released[gvr]
	if !ok {
		ch = make(chan struct{})
		p.released[gvr] = ch
	}
	return ch
}

func (p *windowPlan) busy() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.open:
		return "the controller's watch events are held"
	case p.ended > 0:
		return "the controller's informers are listing again"
	}
	return ""
}

func (p *windowPlan) afterWrite(w *world, _ *proc, _, worldWrites int) {
	if worldWrites != p.m || !p.hit.CompareAndSwap(false, true) {
		return
	}
	what := "of every resource, delivered merged"
	from, _ := strconv.ParseInt(w.cluster.Snapshot().ResourceVersion(), 10, 64) // this write's: the cluster serves one at a time
	p.mu.Lock()
	p.open, p.from, p.released = true, from, map[string]chan struct{}{}
	if p.relist {
		if present := w.resources(); len(present) > 0 {
			p.only = present[int(p.pick*float64(len(present)))].String()
		}
		what = fmt.Sprintf("of %s, then its watches end with 410 Gone", p.only)
	}
	p.mu.Unlock()
	w.record("fault: the process's watch events are held for %v, %s", p.hold, what)
	w.after(p.hold, func() {
		p.mu.Lock()
		p.open = false
		released := p.released
		p.mu.Unlock()
		// One resource at a time, in order, a moment apart: the informers then take their
		// events in the same order in every run.
		for _, gvr := range slices.Sorted(maps.Keys(released)) {
			close(released[gvr])
			time.Sleep(10*latency + offGrid)
		}
	})
}

func (p *windowPlan) watch(gvr schema.GroupVersionResource, inner watch.Interface) watch.Interface {
	p.mu.Lock()
	if p.ended > 0 {
		p.ended-- // an informer watches again: its list is done
	}
	p.mu.Unlock()
	return newHeldWatch(inner, gvr.String(), p)
}

// heldWatch forwards a watch, holding its events while the plan holds its resource and then
// delivering them merged (or ending with 410 Gone for Relist).
type heldWatch struct {
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
	done chan struct{}
}

func newHeldWatch(inner watch.Interface, gvr string, p *windowPlan) *heldWatch {
	h := &heldWatch{out: make(chan watch.Event), stop: make(chan struct{}), done: make(chan struct{})}
	go h.run(inner, gvr, p)
	return h
}

func (h *heldWatch) run(inner watch.Interface, gvr string, p *windowPlan) {
	defer close(h.done)
	defer close(h.out)
	defer inner.Stop()
	var held []watch.Event
	var release chan struct{} // what the held events wait for
	send := func(ev watch.Event) bool {
		select {
		case h.out <- ev:
			return true
		case <-h.stop:
			return false
		}
	}
	// flush delivers the held events (false: the watch ends).
	flush := func() bool {
		release = nil
		if p.relist {
			p.mu.Lock()
			p.ended++
			p.mu.Unlock()
			send(watch.Event{Type: watch.Error, Object: &apierrors.NewResourceExpired("sim: too old resource version").ErrStatus})
			return false
		}
		for _, ev := range merge(held) {
			if !send(ev) {
				return false
			}
		}
		held = nil
		return true
	}
	for {
		select {
		case ev, ok := <-inner.ResultChan():
			if !ok {
				return
			}
			if ch := p.holding(gvr, ev.Object); ch != nil {
				held, release = append(held, ev), ch
				continue
			}
			if release != nil && !flush() { // the window closed: what it held goes first
				return
			}
			if !send(ev) {
				return
			}
		case <-release:
			if !flush() {
				return
			}
		case <-h.stop:
			return
		}
	}
}

func (h *heldWatch) ResultChan() <-chan watch.Event { return h.out }

func (h *heldWatch) Stop() {
	h.once.Do(func() { close(h.stop) })
	<-h.done
}

// merge folds each object's events into the one a watcher that missed the ones in between
// would act on: created and deleted meanwhile, nothing; created, its last state added;
// known and deleted, deleted; known (or deleted and created again), its last state modified.
// The results come in the order of their resourceVersions.
func merge(evs []watch.Event) []watch.Event {
	type fold struct {
		first, last watch.Event
	}
	var order []types.NamespacedName
	folds := map[types.NamespacedName]*fold{}
	var other []watch.Event // bookmarks, errors
	for _, ev := range evs {
		m, err := meta.Accessor(ev.Object)
		if err != nil || (ev.Type != watch.Added && ev.Type != watch.Modified && ev.Type != watch.Deleted) {
			other = append(other, ev)
			continue
		}
		k := types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()}
		if f, ok := folds[k]; ok {
			f.last = ev
			continue
		}
		folds[k] = &fold{first: ev, last: ev}
		order = append(order, k)
	}
	var out []watch.Event
	for _, k := range order {
		f := folds[k]
		switch {
		case f.first.Type == watch.Added && f.last.Type == watch.Deleted:
			continue
		case f.first.Type == watch.Added:
			out = append(out, watch.Event{Type: watch.Added, Object: f.last.Object})
		case f.last.Type == watch.Deleted:
			out = append(out, f.last)
		default:
			out = append(out, watch.Event{Type: watch.Modified, Object: f.last.Object})
		}
	}
	slices.SortStableFunc(out, func(a, b watch.Event) int { return compareRV(a.Object, b.Object) })
	return append(out, other...)
}

func compareRV(a, b runtime.Object) int {
	ma, _ := meta.Accessor(a)
	mb, _ := meta.Accessor(b)
	ra, rb := ma.GetResourceVersion(), mb.GetResourceVersion()
	if len(ra) != len(rb) {
		return len(ra) - len(rb)
	}
	switch {
	case ra < rb:
		return -1
	case ra > rb:
		return 1
	}
	return 0
}

// APIErrors makes percent of the controller's writes fail before they reach the cluster, each
// with one of the errors an API server answers under load, drawn from the seed: 409 Conflict,
// 429 Too Many Requests (Retry-After 1 s), 500 Internal Error, 504 Timeout.
func APIErrors(percent int) Fault { return apiErrorsFault{percent: percent} }

type apiErrorsFault struct{ percent int }

func (f apiErrorsFault) String() string { return fmt.Sprintf("api-errors-%d%%", f.percent) }
func (f apiErrorsFault) plan(rng *rand.Rand, _ *Result) plan {
	return &apiErrorsPlan{percent: f.percent, rng: rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))}
}

type apiErrorsPlan struct {
	base
	percent int
	mu      sync.Mutex
	rng     *rand.Rand
}

func (p *apiErrorsPlan) String() string { return fmt.Sprintf("%d%% of the writes fail", p.percent) }

var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true}

func (p *apiErrorsPlan) install(w *world, pr *proc) {
	pr.conn.Clientset().PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if !writeVerbs[a.GetVerb()] {
			return false, nil, nil
		}
		p.mu.Lock()
		fail, kind := p.rng.IntN(100) < p.percent, p.rng.IntN(4)
		p.mu.Unlock()
		if !fail {
			return false, nil, nil
		}
		p.hit.Store(true)
		gr := a.GetResource().GroupResource()
		name := ""
		if n, ok := a.(interface{ GetName() string }); ok {
			name = n.GetName()
		}
		injected := errors.New("sim: injected")
		var err error
		switch kind {
		case 0:
			err = apierrors.NewConflict(gr, name, injected)
		case 1:
			err = apierrors.NewTooManyRequests("sim: injected", 1)
		case 2:
			err = apierrors.NewInternalError(injected)
		default:
			err = apierrors.NewServerTimeout(gr, a.GetVerb(), 1)
		}
		return true, nil, err
	})
}

// Drift has another actor, once the workload is done and the world quiet, delete one of the
// objects the controller created (drawn from the seed), as kubectl or another manager would:
// the controller must put it back.
func Drift() Fault { return driftFault{} }

// Edit has another actor, once the workload is done and the world quiet, set one of the fields
// the controller wrote into an object it created (a label, an annotation, a field of its spec or
// data, found in its managedFields; drawn from the seed) to another value: the controller must
// put it back. For controllers that own the content of what they create; a ReplicaSet
// controller, which never updates its Pods and releases a Pod relabelled out of its selector,
// rightly ends elsewhere.
func Edit() Fault { return driftFault{edit: true} }

type driftFault struct{ edit bool }

func (f driftFault) String() string {
	if f.edit {
		return "edit"
	}
	return "drift"
}

func (f driftFault) plan(rng *rand.Rand, _ *Result) plan {
	return &driftPlan{pick: rng.Float64(), edit: f.edit, field: rng.Float64()}
}

type driftPlan struct {
	base
	pick  float64 // which object
	edit  bool    // edit it rather than delete it
	field float64 // which of its fields
}

func (p *driftPlan) String() string {
	return "another actor changes or deletes an object the controller created"
}

func (p *driftPlan) end(w *world) bool {
	objs := w.processCreated()
	if len(objs) == 0 {
		return false
	}
	o := objs[int(p.pick*float64(len(objs)))]
	res := w.user.Dynamic.Resource(o.gvr).Namespace(o.namespace)
	if p.edit {
		obj, err := res.Get(w.ctx, o.name, metav1.GetOptions{})
		if err != nil {
			w.problem("drift: reading %s: %v", o.name, err)
			return false
		}
		if paths := writtenFields(obj.GetManagedFields()); len(paths) > 0 {
			path := paths[int(p.field*float64(len(paths)))]
			if old, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, path...); ok {
				if drifted, ok := driftValue(old); ok {
					if err := unstructured.SetNestedField(obj.Object, drifted, path...); err == nil {
						w.record("fault: another actor sets %s of %s %s to %v", strings.Join(path, "."), resourceString(o.gvr), nsName(o.namespace, o.name), drifted)
						if _, err := res.Update(w.ctx, obj, metav1.UpdateOptions{FieldManager: "sim-drift"}); err != nil {
							w.problem("drift: updating %s: %v", o.name, err)
							return false
						}
						p.touch(w, o)
						return true
					}
				}
			}
		}
		// Nothing of it to change: delete it instead.
	}
	w.record("fault: another actor deletes %s %s", resourceString(o.gvr), nsName(o.namespace, o.name))
	if err := res.Delete(w.ctx, o.name, metav1.DeleteOptions{}); err != nil && !isNotFound(err) {
		w.problem("drift: deleting %s: %v", o.name, err)
		return false
	}
	p.touch(w, o)
	return true
}

func (p *driftPlan) touch(w *world, o createdObject) {
	p.hit.Store(true)
	w.mu.Lock()
	w.res.touched[o.key] = true
	w.mu.Unlock()
}

// writtenFields returns the paths of the scalar fields the managedFields entries record, but
// for status and the metadata only the system writes (owner references, finalizers), sorted.
func writtenFields(entries []metav1.ManagedFieldsEntry) [][]string {
	seen := map[string][]string{}
	var walk func(m map[string]any, path []string)
	walk = func(m map[string]any, path []string) {
		leaf := true
		for k, v := range m {
			name, ok := strings.CutPrefix(k, "f:")
			if !ok {
				if k != "." {
					leaf = false // a list item (k:, v:, i:): lists are left alone
				}
				continue
			}
			leaf = false
			child, _ := v.(map[string]any)
			walk(child, append(slices.Clone(path), name))
		}
		if leaf && len(path) > 0 {
			seen[strings.Join(path, ".")] = path
		}
	}
	for _, e := range entries {
		if e.FieldsV1 == nil || e.Subresource != "" {
			continue
		}
		var m map[string]any
		if json.Unmarshal(e.FieldsV1.Raw, &m) == nil {
			walk(m, nil)
		}
	}
	var out [][]string
	for _, k := range slices.Sorted(maps.Keys(seen)) {
		path := seen[k]
		switch {
		case path[0] == "status",
			path[0] == "metadata" && len(path) > 1 && path[1] != "labels" && path[1] != "annotations":
			continue
		}
		out = append(out, path)
	}
	return out
}

// driftValue is another value of v's type; false for a value that is not a scalar.
func driftValue(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		return x + "-drifted", true
	case int64:
		return x + 1, true
	case float64:
		return x + 1, true
	case bool:
		return !x, true
	}
	return nil, false
}

// pacedWatch forwards a watch one event per latency at most: a burst (a replay after a lag,
// held events released) reaches the informers as writes do, each event's consequences done
// before the next arrives, in every run alike.
type pacedWatch struct {
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
	done chan struct{}
}

func newPacedWatch(inner watch.Interface) *pacedWatch {
	w := &pacedWatch{out: make(chan watch.Event), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run(inner)
	return w
}

func (w *pacedWatch) run(inner watch.Interface) {
	defer close(w.done)
	defer close(w.out)
	defer inner.Stop()
	for {
		select {
		case ev, ok := <-inner.ResultChan():
			if !ok {
				return
			}
			select {
			case w.out <- ev:
			case <-w.stop:
				return
			}
			t := time.NewTimer(latency)
			select {
			case <-t.C:
			case <-w.stop:
				t.Stop()
				return
			}
		case <-w.stop:
			return
		}
	}
}

func (w *pacedWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *pacedWatch) Stop() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
}
