package leaderelection

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failover measures one handover on its own cluster: a leads, b waits as a standby (and has
// seen a), a is stopped; it returns how long after a's Run returned b led, and the commit
// log.
func failover(t testing.TB, seed uint64, release bool) (stoppedToLed time.Duration, c *cluster) {
	t.Helper()
	c = newCluster(0, seed)
	cfgA, cfgB := fastConfig("a"), fastConfig("b")
	cfgA.ReleaseOnCancel = release
	recA, recB := newRecorder(), newRecorder()
	a, err := NewElector(c.client(&netem{}), cfgA, recA.callbacks())
	require.NoError(t, err)
	b, err := NewElector(c.client(&netem{}), cfgB, recB.callbacks())
	require.NoError(t, err)

	ra := start(a)
	waitFor(t, recA.started, 5*time.Second, "a to lead")
	rb := start(b)
	defer rb.stop(t)
	waitForValue(t, recB.newLeaders, "a", 5*time.Second, "b to see a")

	require.NoError(t, ra.stop(t))
	stopped := time.Now()
	waitFor(t, recB.started, 10*time.Second, "b to take over")
	return time.Since(stopped), c
}

// summary is min/median/max of ds.
func summary(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	return fmt.Sprintf("min %v, median %v, max %v over %d", s[0].Round(time.Millisecond),
		s[len(s)/2].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond), len(s))
}

// trials runs fn n times concurrently (each on its own cluster).
func trials(n int, fn func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { fn(i) })
	}
	wg.Wait()
}

func failoverTrials(t *testing.T) int {
	if testing.Short() {
		return 2
	}
	return 4
}

// Without a release the standby waits out the lease: it takes over no sooner than
// LeaseDuration after the last renewal it saw, and no later than its next poll after that.
// Both it observes at jittered RetryPeriods, so the upper bound is
// LeaseDuration + 2×(1+JitterFactor)×RetryPeriod.
func TestFailoverWithoutRelease(t *testing.T) {
	cfg := fastConfig("")
	n := failoverTrials(t)
	fromStop := make([]time.Duration, n)
	fromRenew := make([]time.Duration, n)
	var mu sync.Mutex
	trials(n, func(i int) {
		d, c := failover(t, uint64(100+i), false)
		log := c.log()
		assertTakeoversJustified(t, log, cfg.LeaseDuration)
		gap := c.acquiredAt("b").Sub(c.lastWriteBy("a"))
		mu.Lock()
		fromStop[i], fromRenew[i] = d, gap
		mu.Unlock()
	})
	t.Logf("LeaseDuration %v, RenewDeadline %v, RetryPeriod %v, no release", cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod)
	t.Logf("leader stopped -> standby leading: %s", summary(fromStop))
	t.Logf("last renewal committed -> standby's takeover committed: %s", summary(fromRenew))
	bound := cfg.LeaseDuration + time.Duration(2*(1+JitterFactor)*float64(cfg.RetryPeriod))
	for i := range n {
		assert.GreaterOrEqual(t, fromRenew[i], cfg.LeaseDuration, "takeover before the lease expired")
		// Generous slack: the bound is the protocol's, the machine is shared.
		assert.Less(t, fromRenew[i], bound+time.Second, "takeover long after the lease expired")
	}
}

// With ReleaseOnCancel the leader empties the Lease as it stops and the standby takes it at
// its next poll: within (1+JitterFactor)×RetryPeriod of the release.
func TestFailoverWithRelease(t *testing.T) {
	cfg := fastConfig("")
	n := failoverTrials(t)
	fromStop := make([]time.Duration, n)
	fromRelease := make([]time.Duration, n)
	var mu sync.Mutex
	trials(n, func(i int) {
		d, c := failover(t, uint64(200+i), true)
		released := c.lastWriteBy("")
		require.False(t, released.IsZero(), "a released the lease")
		gap := c.acquiredAt("b").Sub(released)
		mu.Lock()
		fromStop[i], fromRelease[i] = d, gap
		mu.Unlock()
	})
	t.Logf("LeaseDuration %v, RenewDeadline %v, RetryPeriod %v, ReleaseOnCancel", cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod)
	t.Logf("leader stopped -> standby leading: %s", summary(fromStop))
	t.Logf("release committed -> standby's takeover committed: %s", summary(fromRelease))
	bound := time.Duration((1 + JitterFactor) * float64(cfg.RetryPeriod))
	for i := range n {
		assert.Positive(t, fromRelease[i], "takeover before the release")
		assert.Less(t, fromRelease[i], bound+time.Second, "takeover long after the release")
		assert.Less(t, fromStop[i], cfg.LeaseDuration, "a released lease is taken before it would expire")
	}
}

// BenchmarkFailover reports handover times as metrics (ms from the old leader's Run
// returning to the standby's OnStartedLeading); each iteration is one real-time failover.
// Run with e.g. -bench Failover -benchtime 10x.
func BenchmarkFailover(b *testing.B) {
	for _, release := range []bool{false, true} {
		name := "no-release"
		if release {
			name = "release-on-cancel"
		}
		b.Run(name, func(b *testing.B) {
			var ds []time.Duration
			for i := 0; b.Loop(); i++ {
				d, _ := failover(b, uint64(300+i), release)
				ds = append(ds, d)
			}
			slices.Sort(ds)
			var sum time.Duration
			for _, d := range ds {
				sum += d
			}
			b.ReportMetric(float64(sum.Milliseconds())/float64(len(ds)), "mean-ms")
			b.ReportMetric(float64(ds[len(ds)-1].Milliseconds()), "max-ms")
			b.ReportMetric(float64(ds[0].Milliseconds()), "min-ms")
		})
	}
}
