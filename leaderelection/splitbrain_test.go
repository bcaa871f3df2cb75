package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// overlapTolerance is the split-brain checker's allowance. All electors share one process
// and one monotonic clock, so there is no clock skew between them; what remains is
// measurement: an interval ends when the test's OnStartedLeading goroutine wakes after its
// ctx was cancelled, which a loaded 2-core machine can delay. The protocol's own margin,
// LeaseDuration − RenewDeadline − RetryPeriod, is 400 ms with splitBrainConfig and 200 ms
// with fastConfig, and a real split brain (see TestCheckerDetectsSplitBrainWithoutOCC)
// overlaps by whole lease durations.
const overlapTolerance = 100 * time.Millisecond

func splitBrainConfig(identity string) Config {
	return Config{
		Namespace:     "default",
		Name:          "ctrl",
		Identity:      identity,
		LeaseDuration: time.Second,
		RenewDeadline: 500 * time.Millisecond,
		RetryPeriod:   100 * time.Millisecond,
	}
}

// interval is one term: from the commit that made who the holder (or OnStartedLeading's
// entry, if earlier) until OnStartedLeading's ctx was seen cancelled.
type interval struct {
	who        string
	start, end time.Time
}

// intervals collects terms from many goroutines.
type intervals struct {
	mu  sync.Mutex
	all []interval
}

func (iv *intervals) add(i interval) {
	iv.mu.Lock()
	iv.all = append(iv.all, i)
	iv.mu.Unlock()
}

// callbacks records each term of who; acquiredAt dates its start from the commit log.
func (iv *intervals) callbacks(c *cluster, who string) Callbacks {
	return Callbacks{OnStartedLeading: func(ctx context.Context) {
		entered := time.Now()
		start := c.acquiredAt(who)
		if start.IsZero() || start.After(entered) {
			start = entered
		}
		<-ctx.Done()
		iv.add(interval{who: who, start: start, end: time.Now()})
	}}
}

// maxOverlap is the longest time two terms of different candidates were both live, and the
// closest approach between terms of different candidates that did not overlap (the
// smallest handover gap, -1 when no two candidates' terms are apart).
func maxOverlap(all []interval) (overlap time.Duration, pair [2]interval, closestGap time.Duration) {
	s := append([]interval(nil), all...)
	sort.Slice(s, func(i, j int) bool { return s[i].start.Before(s[j].start) })
	closestGap = -1
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[i].who == s[j].who {
				continue
			}
			end := s[i].end
			if s[j].end.Before(end) {
				end = s[j].end
			}
			if d := end.Sub(s[j].start); d > overlap {
				overlap, pair = d, [2]interval{s[i], s[j]}
			} else if d <= 0 && (closestGap < 0 || -d < closestGap) {
				closestGap = -d
			}
		}
	}
	return overlap, pair, closestGap
}

func TestMaxOverlap(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }
	d, _, gap := maxOverlap([]interval{{"a", at(0), at(100)}, {"b", at(150), at(300)}, {"a", at(320), at(400)}})
	assert.Zero(t, d)
	assert.Equal(t, 20*time.Millisecond, gap)
	d, pair, _ := maxOverlap([]interval{{"a", at(0), at(100)}, {"b", at(60), at(300)}, {"c", at(250), at(260)}})
	assert.Equal(t, 40*time.Millisecond, d)
	assert.Equal(t, "a", pair[0].who)
	assert.Equal(t, "b", pair[1].who)
	d, _, _ = maxOverlap([]interval{{"a", at(0), at(100)}, {"b", at(10), at(20)}}) // nested
	assert.Equal(t, 10*time.Millisecond, d)
	d, _, gap = maxOverlap([]interval{{"a", at(0), at(100)}, {"a", at(50), at(150)}}) // same candidate
	assert.Zero(t, d)
	assert.Equal(t, time.Duration(-1), gap)
}

// The reactor the split-brain tests rely on: a stale resourceVersion is a Conflict, a
// fresh one is stored with a new resourceVersion.
func TestOCCReactor(t *testing.T) {
	ctx := context.Background()
	c := newCluster(0, 1)
	leases := c.cs.CoordinationV1().Leases("default")
	created, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "default"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a")},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, created.ResourceVersion)

	b := created.DeepCopy()
	b.Spec.HolderIdentity = ptr.To("b")
	updated, err := leases.Update(ctx, b, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.NotEqual(t, created.ResourceVersion, updated.ResourceVersion)

	stale := created.DeepCopy()
	stale.Spec.HolderIdentity = ptr.To("c")
	_, err = leases.Update(ctx, stale, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsConflict(err), "stale update: %v", err)
	got, err := leases.Get(ctx, "l", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "b", holderOf(got))
	_, err = leases.Create(ctx, created, metav1.CreateOptions{})
	assert.True(t, apierrors.IsAlreadyExists(err))
	assert.Len(t, c.log(), 2)
}

// chaosStats sums up what one randomized run exercised.
type chaosStats struct {
	terms, takeovers, lost, starts, stops, partitions int
	overlap, closestGap                               time.Duration
	pair                                              [2]interval
}

// chaosRun runs candidates slots for d against one cluster: every 20-250 ms one slot (half
// the time the leader's) is
// started (half the time with a fresh identity, as a new pod), stopped (ctx cancelled;
// ReleaseOnCancel is chosen per elector) or partitioned from the API server for 0.2-1.5 s;
// requests and replies wait up to 15 ms each, 5% of writes fail before they are stored and
// 3% of stored writes lose their reply.
func chaosRun(t *testing.T, seed uint64, slots int, d time.Duration, template Config) chaosStats {
	rnd := rand.New(rand.NewPCG(seed, 0xc4a05))
	c := newCluster(0.05, seed)
	iv := &intervals{}
	var st chaosStats

	type slot struct {
		n       *netem
		gen     int
		e       *Elector
		run     *running
		healAt  time.Time
		healing bool
	}
	ss := make([]*slot, slots)
	for k := range ss {
		ss[k] = &slot{n: &netem{rnd: rand.New(rand.NewPCG(seed, uint64(k))), maxLatency: 15 * time.Millisecond, lostReply: 0.03}}
	}
	startSlot := func(k int, s *slot) {
		if s.e == nil || rnd.IntN(2) == 0 {
			s.gen++
			id := fmt.Sprintf("c%d-%d", k, s.gen)
			cfg := template
			cfg.Identity = id
			cfg.ReleaseOnCancel = rnd.IntN(2) == 0
			e, err := NewElector(c.client(s.n), cfg, iv.callbacks(c, id))
			require.NoError(t, err)
			s.e = e
		}
		s.run = start(s.e)
		st.starts++
	}
	// reap notices a Run that ended by itself: that is only ever a lost lease.
	reap := func(s *slot) {
		if s.run == nil {
			return
		}
		select {
		case err := <-s.run.done:
			s.run.cancel()
			s.run = nil
			if !errors.Is(err, ErrLeaseLost) {
				t.Errorf("Run ended by itself with %v, want ErrLeaseLost", err)
			}
			st.lost++
		default:
		}
	}

	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		// The schedule of a random workload, not a wait for a condition.
		time.Sleep(time.Duration(20+rnd.IntN(230)) * time.Millisecond)
		now := time.Now()
		for _, s := range ss {
			reap(s)
			if s.healing && now.After(s.healAt) {
				s.n.setPartitioned(false)
				s.healing = false
			}
		}
		// Half the time act on the leader, so that leadership changes hands often.
		k := rnd.IntN(slots)
		if rnd.IntN(2) == 0 {
			for j, s := range ss {
				if s.run != nil && s.e.IsLeader() {
					k = j
				}
			}
		}
		s := ss[k]
		switch r := rnd.Float64(); {
		case s.run == nil:
			startSlot(k, s)
		case r < 0.4:
			require.NoError(t, s.run.stop(t))
			s.run = nil
			st.stops++
		case r < 0.7 && !s.healing:
			s.n.setPartitioned(true)
			s.healing, s.healAt = true, now.Add(time.Duration(200+rnd.IntN(1300))*time.Millisecond)
			st.partitions++
		}
	}
	for _, s := range ss {
		if s.run != nil {
			err := s.run.stop(t)
			if err != nil && !errors.Is(err, ErrLeaseLost) {
				t.Errorf("Run: %v", err)
			}
		}
		s.n.setPartitioned(false)
	}

	st.takeovers = assertTakeoversJustified(t, c.log(), template.LeaseDuration)
	iv.mu.Lock()
	st.terms = len(iv.all)
	st.overlap, st.pair, st.closestGap = maxOverlap(iv.all)
	iv.mu.Unlock()
	return st
}

// TestNoSplitBrain runs many randomized elections (several electors on one OCC-enforcing
// fake API server, latency, failed writes, lost replies, partitions, random stops and
// starts) and checks that no two candidates' OnStartedLeading contexts were live at the
// same instant beyond overlapTolerance.
func TestNoSplitBrain(t *testing.T) {
	runs, d := 12, 4*time.Second
	if testing.Short() {
		runs, d = 4, 3*time.Second
	}
	seed := uint64(time.Now().UnixNano())
	// Alternate runs use the failover tests' durations, whose margin is half as wide.
	configs := []Config{splitBrainConfig(""), fastConfig("")}
	for _, c := range configs {
		t.Logf("config: LeaseDuration %v, RenewDeadline %v, RetryPeriod %v", c.LeaseDuration, c.RenewDeadline, c.RetryPeriod)
	}
	t.Logf("seed %d, %d runs of %v, 4 candidates each", seed, runs, d)

	sem := make(chan struct{}, 4) // runs in flight
	batch := func(from int) []chaosStats {
		out := make([]chaosStats, runs)
		var wg sync.WaitGroup
		for j := range runs {
			i := from + j
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				out[j] = chaosRun(t, seed+uint64(i), 4, d, configs[i%len(configs)])
			})
		}
		wg.Wait()
		return out
	}
	results := batch(0)
	// A schedule may by chance partition no leader long enough to lose its lease; the runs
	// must include losses (asserted below), so one more batch of seeds runs when none did.
	if lost := func() (n int) {
		for _, r := range results {
			n += r.lost
		}
		return n
	}(); lost == 0 {
		t.Logf("no lease lost in %d runs: %d more", runs, runs)
		results = append(results, batch(runs)...)
	}

	var total chaosStats
	total.closestGap = -1
	for i, r := range results {
		total.terms += r.terms
		total.takeovers += r.takeovers
		total.lost += r.lost
		total.starts += r.starts
		total.stops += r.stops
		total.partitions += r.partitions
		if r.overlap > total.overlap {
			total.overlap, total.pair = r.overlap, r.pair
		}
		if r.closestGap >= 0 && (total.closestGap < 0 || r.closestGap < total.closestGap) {
			total.closestGap = r.closestGap
		}
		assert.LessOrEqual(t, r.overlap, overlapTolerance, "run %d (seed %d): %s and %s overlap by %v",
			i, seed+uint64(i), r.pair[0].who, r.pair[1].who, r.overlap)
	}
	t.Logf("terms %d, takeovers of an unreleased lease %d, leases lost %d, starts %d, stops %d, partitions %d",
		total.terms, total.takeovers, total.lost, total.starts, total.stops, total.partitions)
	t.Logf("max overlap of two leaders: %v (tolerance %v); closest handover gap: %v",
		total.overlap, overlapTolerance, total.closestGap)
	assert.Greater(t, total.terms, runs, "the runs must hand leadership over")
	assert.Positive(t, total.lost, "the runs must lose leases, not only stop leaders")
}

// The negative control: on the fake's own tracker, which ignores resourceVersion, two
// standbys that both saw the old lease expire both win it, and keep "renewing" over each
// other. The checker must report that; with the OCC reactor the same scenario is clean.
func TestCheckerDetectsSplitBrainWithoutOCC(t *testing.T) {
	for _, occ := range []bool{false, true} {
		t.Run(fmt.Sprintf("occ=%v", occ), func(t *testing.T) {
			c := newClusterOCC(occ, 0, 7)
			// A dead leader's lease; the standbys wait a LeaseDuration from first seeing it.
			_, err := c.cs.CoordinationV1().Leases("default").Create(context.Background(), &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: "ctrl", Namespace: "default"},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("dead"), LeaseDurationSeconds: ptr.To[int32](1),
					RenewTime: &metav1.MicroTime{Time: time.Now()}},
			}, metav1.CreateOptions{})
			require.NoError(t, err)
			iv := &intervals{}
			var runs []*running
			for _, id := range []string{"b", "c"} {
				// Writes take 300 ms to reach the server, longer than a standby's poll
				// interval, so the two standbys' read-then-write attempts interleave.
				n := &netem{writeDelay: 300 * time.Millisecond}
				e, err := NewElector(c.client(n), splitBrainConfig(id), iv.callbacks(c, id))
				require.NoError(t, err)
				runs = append(runs, start(e))
			}
			// Long enough for the lease to expire and for both to have taken it.
			time.Sleep(3 * time.Second)
			for _, r := range runs {
				err := r.stop(t)
				if err != nil && !errors.Is(err, ErrLeaseLost) {
					t.Errorf("Run: %v", err)
				}
			}
			iv.mu.Lock()
			overlap, pair, _ := maxOverlap(iv.all)
			iv.mu.Unlock()
			t.Logf("occ=%v: max overlap %v (%v, %v)", occ, overlap, pair[0].who, pair[1].who)
			if occ {
				assert.LessOrEqual(t, overlap, overlapTolerance)
			} else {
				assert.Greater(t, overlap, overlapTolerance, "the checker must see the split brain")
			}
		})
	}
}
