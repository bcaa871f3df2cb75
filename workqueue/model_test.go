package workqueue_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	kworkqueue "k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/workqueue"
)

// refModel is the reference the queue is checked against in the sequential model test and the
// fuzz target: the rules of the package written the simplest way (a map and linear scans).
type refModel struct {
	now      time.Duration
	entries  map[string]*refEntry
	seq      uint64
	failures map[string]int
	shutdown bool
	base     time.Duration
	max      time.Duration

	cfg modelConfig
	// With flows: per priority, the flows with queued items in their rotation, and the items
	// left in the turn of each.
	rot    map[int][]string
	credit map[int]map[string]int
	tick   int64 // with aging: the last tick counted
}

// modelConfig is what a model run turns on beyond the defaults.
type modelConfig struct {
	flows bool // WithFlows(modelFlow) and WithFlowWeights(modelWeight)
	aging bool // WithAging(modelAging)
}

// modelAging is the aging bound of the model runs: a tick every 10 ms.
const modelAging = 40 * time.Millisecond

// modelFlow puts the model's keys in four flows of unequal sizes.
func modelFlow(k string) string {
	switch k {
	case "a", "b", "c":
		return "x"
	case "d", "e":
		return "y"
	case "f":
		return "z"
	}
	return ""
}

func modelWeight(f string) int {
	if f == "x" {
		return 2
	}
	return 0 // counts as 1
}

type refEntry struct {
	queued     bool
	processing bool
	dirty      bool
	prio       int    // of the ready slot, or of the re-add after Done when dirty
	seq        uint64 // FIFO order of the ready slot
	pushTick   int64  // the aging tick counted when the ready slot was taken

	waiting  bool
	held     bool          // an AddOpts.Hold wait: adds join it
	wakeAt   time.Duration // AddOpts.WakeAfter: the first add to join ends the hold then; 0: none
	readyAt  time.Duration
	waitPrio int
	waitSeq  uint64
}

func newRefModel(base, max time.Duration, cfg modelConfig) *refModel {
	return &refModel{entries: map[string]*refEntry{}, failures: map[string]int{}, base: base, max: max,
		cfg: cfg, rot: map[int][]string{}, credit: map[int]map[string]int{}}
}

// enqueue makes k ready at prio, at the back of its FIFO (and its flow's).
func (m *refModel) enqueue(k string, e *refEntry, prio int) {
	e.queued, e.prio, e.seq, e.pushTick = true, prio, m.next(), m.tick
	if !m.cfg.flows {
		return
	}
	f := modelFlow(k)
	if !slices.Contains(m.rot[prio], f) {
		m.rot[prio] = append(m.rot[prio], f)
		if m.credit[prio] == nil {
			m.credit[prio] = map[string]int{}
		}
		m.credit[prio][f] = max(1, modelWeight(f))
	}
}

// flowHas reports whether flow f has a queued item at prio.
func (m *refModel) flowHas(prio int, f string) bool {
	for k, e := range m.entries {
		if e.queued && e.prio == prio && modelFlow(k) == f {
			return true
		}
	}
	return false
}

// left is called once k's item no longer counts as queued at prio: its flow leaves the
// rotation when that was its last item there.
func (m *refModel) left(k string, prio int) {
	if f := modelFlow(k); m.cfg.flows && !m.flowHas(prio, f) {
		m.rot[prio] = slices.DeleteFunc(m.rot[prio], func(g string) bool { return g == f })
		delete(m.credit[prio], f)
	}
}

func (m *refModel) next() uint64 { m.seq++; return m.seq }

func (m *refModel) entry(k string) *refEntry {
	e := m.entries[k]
	if e == nil {
		e = &refEntry{}
		m.entries[k] = e
	}
	return e
}

func (m *refModel) cleanup(k string) {
	if e := m.entries[k]; e != nil && !e.queued && !e.processing && !e.waiting {
		delete(m.entries, k)
	}
}

func (m *refModel) add(k string, prio int) {
	if m.shutdown {
		return
	}
	e := m.entry(k)
	if e.held && !e.processing {
		e.waitPrio = max(e.waitPrio, prio)
		m.wake(k, e)
		return
	}
	switch {
	case e.processing:
		if !e.dirty {
			e.dirty, e.prio = true, prio
		} else if prio > e.prio {
			e.prio = prio
		}
	case e.queued:
		if prio > e.prio {
			old := e.prio
			e.prio = prio + 1<<40 // out of old while its flow is looked at
			m.left(k, old)
			m.enqueue(k, e, prio)
		}
	default:
		m.enqueue(k, e, prio)
	}
}

func (m *refModel) delay(k string, d time.Duration, prio int, hold bool, wake time.Duration) {
	if m.shutdown {
		return
	}
	if d <= 0 {
		m.add(k, prio)
		return
	}
	e := m.entry(k)
	at := m.now + d
	if hold && !e.queued {
		e.held, e.wakeAt = true, 0
		if wake > 0 && wake < d {
			e.wakeAt = m.now + wake
		}
	} else if e.held && at < e.readyAt {
		e.waitPrio = max(e.waitPrio, prio)
		m.wake(k, e)
		return
	}
	if e.waiting {
		e.waitPrio = max(e.waitPrio, prio)
		if at < e.readyAt {
			// An earlier ready time counts as a new wait: among equal times it comes last.
			e.readyAt, e.waitSeq = at, m.next()
		}
		return
	}
	e.waiting, e.readyAt, e.waitPrio, e.waitSeq = true, at, prio, m.next()
}

// wake is an add joining e's hold: the first brings its end forward to the wake time.
func (m *refModel) wake(k string, e *refEntry) {
	w := e.wakeAt
	if w == 0 {
		return
	}
	e.wakeAt = 0
	switch {
	case w <= m.now:
		e.waiting, e.held = false, false
		m.add(k, e.waitPrio)
	case w < e.readyAt:
		e.readyAt, e.waitSeq = w, m.next()
	}
}

// when is client-go's ItemExponentialFailureRateLimiter.
func (m *refModel) when(k string) time.Duration {
	exp := m.failures[k]
	m.failures[k]++
	backoff := float64(m.base.Nanoseconds()) * math.Pow(2, float64(exp))
	if backoff > math.MaxInt64 {
		return m.max
	}
	return min(time.Duration(backoff), m.max)
}

func (m *refModel) promote() {
	var due []string
	for k, e := range m.entries {
		if e.waiting && e.readyAt <= m.now {
			due = append(due, k)
		}
	}
	sort.Slice(due, func(i, j int) bool {
		a, b := m.entries[due[i]], m.entries[due[j]]
		if a.readyAt != b.readyAt {
			return a.readyAt < b.readyAt
		}
		return a.waitSeq < b.waitSeq
	})
	for _, k := range due {
		e := m.entries[k]
		e.waiting, e.held, e.wakeAt = false, false, 0
		m.add(k, e.waitPrio)
	}
}

// age counts the aging ticks up to now and promotes the items that waited at least four
// ticks below the highest priority with queued items: from the highest priority down, in FIFO
// order (with flows: flow by flow in rotation order).
func (m *refModel) age() {
	if !m.cfg.aging {
		return
	}
	tick := int64(m.now / (modelAging / 4))
	if tick <= m.tick {
		return
	}
	m.tick = tick
	top, any := 0, false
	for _, e := range m.entries {
		if e.queued && (!any || e.prio > top) {
			top, any = e.prio, true
		}
	}
	if !any || tick < 5 {
		return
	}
	var prios []int
	for _, e := range m.entries {
		if e.queued && e.prio < top && !slices.Contains(prios, e.prio) {
			prios = append(prios, e.prio)
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(prios)))
	var aged []string
	for _, p := range prios {
		flows := []string{""}
		if m.cfg.flows {
			flows = slices.Clone(m.rot[p])
		}
		for _, f := range flows {
			var ks []string
			for k, e := range m.entries {
				if e.queued && e.prio == p && (!m.cfg.flows || modelFlow(k) == f) && e.pushTick <= tick-5 {
					ks = append(ks, k)
				}
			}
			sort.Slice(ks, func(i, j int) bool { return m.entries[ks[i]].seq < m.entries[ks[j]].seq })
			aged = append(aged, ks...)
		}
	}
	for _, k := range aged {
		e := m.entries[k]
		old := e.prio
		e.prio = top + 1<<40
		m.left(k, old)
		m.enqueue(k, e, top)
	}
}

func (m *refModel) length() int {
	m.promote()
	m.age()
	n := 0
	for _, e := range m.entries {
		if e.queued {
			n++
		}
	}
	return n
}

// get returns the item Get hands out, whether Get reports shutdown, and whether Get would block.
func (m *refModel) get() (item string, shutdown, blocks bool) {
	m.promote()
	var best *refEntry
	for k, e := range m.entries {
		if e.queued && (best == nil || e.prio > best.prio || e.prio == best.prio && e.seq < best.seq) {
			best, item = e, k
		}
	}
	if best == nil {
		return "", m.shutdown, !m.shutdown
	}
	if m.cfg.flows {
		// The oldest item of the flow whose turn it is.
		p, f := best.prio, m.rot[best.prio][0]
		best = nil
		for k, e := range m.entries {
			if e.queued && e.prio == p && modelFlow(k) == f && (best == nil || e.seq < best.seq) {
				best, item = e, k
			}
		}
		best.queued, best.processing = false, true
		if !m.flowHas(p, f) {
			m.left(item, p)
		} else if m.credit[p][f] > 1 {
			m.credit[p][f]--
		} else {
			m.credit[p][f] = max(1, modelWeight(f))
			m.rot[p] = append(m.rot[p][1:], f)
		}
		return item, false, false
	}
	best.queued, best.processing = false, true
	return item, false, false
}

func (m *refModel) done(k string) {
	e := m.entries[k]
	if e == nil || !e.processing {
		return
	}
	e.processing = false
	if e.dirty && e.held {
		e.dirty = false
		e.waitPrio = max(e.waitPrio, e.prio)
		m.wake(k, e)
	} else if e.dirty {
		e.dirty = false
		m.enqueue(k, e, e.prio)
	}
	m.cleanup(k)
}

func (m *refModel) shutDown() {
	m.shutdown = true
	for k, e := range m.entries {
		e.waiting, e.held, e.wakeAt = false, false, 0
		m.cleanup(k)
	}
}

func (m *refModel) busy() bool {
	for _, e := range m.entries {
		if e.queued || e.processing {
			return true
		}
	}
	return false
}

func (m *refModel) processingKeys() []string {
	var ks []string
	for k, e := range m.entries {
		if e.processing {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	return ks
}

var modelKeys = []string{"a", "b", "c", "d", "e", "f", "g", "h"}

// runModel drives a fresh queue and the reference model with the operations decoded from next
// (which returns false when the input is exhausted), failing on the first difference. It
// returns the number of operations run.
func runModel(t testing.TB, next func() (byte, bool), maxOps int, cfg modelConfig) int {
	const base, maxDelay = time.Millisecond, time.Second
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	opts := []workqueue.Option[string]{
		workqueue.WithClock[string](clk),
		workqueue.WithRateLimiter(kworkqueue.NewTypedItemExponentialFailureRateLimiter[string](base, maxDelay)),
	}
	if cfg.flows {
		opts = append(opts, workqueue.WithFlows(modelFlow), workqueue.WithFlowWeights[string](modelWeight))
	}
	if cfg.aging {
		opts = append(opts, workqueue.WithAging[string](modelAging))
	}
	q := workqueue.New(opts...)
	defer q.ShutDown()
	m := newRefModel(base, maxDelay, cfg)

	var trace []string
	fail := func(format string, args ...any) {
		t.Helper()
		tail := trace[max(0, len(trace)-40):]
		t.Fatalf("after %d ops (last: %v): %s", len(trace), tail, fmt.Sprintf(format, args...))
	}
	arg := func() byte { b, _ := next(); return b }
	key := func() string { return modelKeys[int(arg())%len(modelKeys)] }
	// Priorities inside and outside the range whose rings live in an array.
	prios := []int{-200, -2, -1, 0, 1, 2, 300}
	prio := func() int { return prios[int(arg())%len(prios)] }
	delay := func() time.Duration { return time.Duration(int(arg()%66)-5) * time.Millisecond }
	// Holds with a wake come from every other op byte that holds (bit 2 of op/20).
	wakeAfter := func(op byte) time.Duration {
		if (op/40)%2 == 0 {
			return 0
		}
		return time.Duration(arg()%30) * time.Millisecond
	}

	ops := 0
	for ; ops < maxOps; ops++ {
		op, ok := next()
		if !ok {
			break
		}
		switch op % 20 {
		case 0, 1, 2:
			k := key()
			trace = append(trace, "Add("+k+")")
			q.Add(k)
			m.add(k, 0)
		case 3:
			p, ks := prio(), []string{key(), key()}
			trace = append(trace, fmt.Sprintf("AddWithOpts(p=%d,%v)", p, ks))
			q.AddWithOpts(workqueue.AddOpts{Priority: p}, ks...)
			for _, k := range ks {
				m.add(k, p)
			}
		case 4:
			p, d, k, hold, wake := prio(), delay(), key(), (op/20)%2 == 1, wakeAfter(op)
			trace = append(trace, fmt.Sprintf("AddWithOpts(p=%d,after=%v,hold=%v,wake=%v,%s)", p, d, hold, wake, k))
			q.AddWithOpts(workqueue.AddOpts{Priority: p, After: d, Hold: hold, WakeAfter: wake}, k)
			m.delay(k, d, p, hold, wake)
		case 5:
			p, d, k, hold, wake := prio(), delay(), key(), (op/20)%2 == 1, wakeAfter(op)
			trace = append(trace, fmt.Sprintf("AddWithOpts(p=%d,after=%v,ratelimited,hold=%v,wake=%v,%s)", p, d, hold, wake, k))
			q.AddWithOpts(workqueue.AddOpts{Priority: p, After: d, RateLimited: true, Hold: hold, WakeAfter: wake}, k)
			if !m.shutdown {
				rl := m.when(k)
				if d > 0 && d < rl {
					rl = d
				}
				m.delay(k, rl, p, hold, wake)
			}
		case 6, 7:
			d, k := delay(), key()
			trace = append(trace, fmt.Sprintf("AddAfter(%s,%v)", k, d))
			q.AddAfter(k, d)
			m.delay(k, d, 0, false, 0)
		case 8:
			k := key()
			trace = append(trace, "AddRateLimited("+k+")")
			q.AddRateLimited(k)
			if !m.shutdown {
				m.delay(k, m.when(k), 0, false, 0)
			}
		case 9, 10, 11:
			want, wantShutdown, blocks := m.get()
			if blocks {
				trace = append(trace, "Len")
				m.age() // Len ages too (nothing is queued: it only counts the ticks)
				if n := q.Len(); n != 0 {
					fail("Len() = %d, model has nothing ready", n)
				}
				continue
			}
			trace = append(trace, "Get")
			got, shutdown := q.Get()
			if got != want || shutdown != wantShutdown {
				fail("Get() = %q, %v; want %q, %v", got, shutdown, want, wantShutdown)
			}
		case 12, 13:
			var k string
			if ps := m.processingKeys(); len(ps) > 0 && arg()%4 != 0 {
				k = ps[int(arg())%len(ps)]
			} else {
				k = key()
			}
			if arg()%2 == 0 {
				trace = append(trace, "Done("+k+")")
				q.Done(k)
				m.done(k)
				continue
			}
			trace = append(trace, "DoneAndTryGet("+k+")")
			got, ok := q.DoneAndTryGet(k)
			m.done(k)
			want, _, _ := m.get() // "" when nothing is ready
			if got != want || ok != (want != "") {
				fail("DoneAndTryGet(%s) = %q, %v; want %q, %v", k, got, ok, want, want != "")
			}
		case 14:
			k := key()
			trace = append(trace, "Forget("+k+")")
			q.Forget(k)
			delete(m.failures, k)
		case 15:
			k := key()
			trace = append(trace, "NumRequeues("+k+")")
			if got, want := q.NumRequeues(k), m.failures[k]; got != want {
				fail("NumRequeues(%s) = %d, want %d", k, got, want)
			}
		case 16, 17:
			d := time.Duration(arg()%40) * time.Millisecond
			trace = append(trace, fmt.Sprintf("Step(%v)", d))
			clk.Step(d)
			m.now += d
			// Len settles the step: due items are promoted before the next operation, so the
			// order of later adds does not depend on when the delay goroutine wakes.
			if got, want := q.Len(), m.length(); got != want {
				fail("Len() after step = %d, want %d", got, want)
			}
		case 18:
			trace = append(trace, "Len")
			if got, want := q.Len(), m.length(); got != want {
				fail("Len() = %d, want %d", got, want)
			}
		case 19:
			switch b := arg(); {
			case b < 8:
				trace = append(trace, "ShutDown")
				q.ShutDown()
				m.shutDown()
			case b < 16 && !m.busy():
				// With nothing ready or processing the drain has nothing to wait for.
				trace = append(trace, "ShutDownWithDrain")
				q.ShutDownWithDrain()
				m.shutDown()
			default:
				trace = append(trace, "ShuttingDown")
				if got := q.ShuttingDown(); got != m.shutdown {
					fail("ShuttingDown() = %v, want %v", got, m.shutdown)
				}
			}
		}
	}
	return ops
}

// TestModelSequential checks long random operation sequences against the reference model:
// every Get must return exactly the model's item (priority, FIFO, dedup, processing rules),
// Len and NumRequeues must agree.
func TestModelSequential(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  modelConfig
	}{
		{"plain", modelConfig{}},
		{"flows", modelConfig{flows: true}},
		{"aging", modelConfig{aging: true}},
		{"flows+aging", modelConfig{flows: true, aging: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			total := modelOps(t)
			if c.cfg != (modelConfig{}) {
				total /= 4 // the model's flows and aging scan every entry
			}
			rng := rand.New(rand.NewPCG(1, 2))
			ran := 0
			for ran < total {
				// Sequences of varied length: short ones explore shutdown and fresh queues often.
				n := 1 + rng.IntN(2000)
				ran += runModel(t, func() (byte, bool) { return byte(rng.Uint32()), true }, n, c.cfg)
			}
			t.Logf("%d operations", ran)
		})
	}
}

// modelOps is the number of operations of each randomized test: 10^6 in the long mode (also
// under -race, where each test takes a few seconds), 2*10^4 with -short.
func modelOps(testing.TB) int {
	if testing.Short() {
		return 20_000
	}
	return 1_000_000
}
