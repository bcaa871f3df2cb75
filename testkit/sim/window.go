package sim

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

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

func (p *windowPlan) watch(_ *proc, gvr schema.GroupVersionResource, inner watch.Interface) watch.Interface {
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
