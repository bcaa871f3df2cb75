package controller

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/provenance"
)

// stepUntilDue checks that nothing is due before d from now on clk (its timer
// is still waiting just before), then steps to d.
func stepUntilDue(t *testing.T, ctx context.Context, clk *testingclock.FakeClock, d time.Duration) {
	t.Helper()
	require.NoError(t, wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return clk.HasWaiters(), nil
	}), "a timer for the held key")
	clk.Step(d - time.Millisecond)
	require.True(t, clk.HasWaiters(), "nothing due before %v", d)
	clk.Step(time.Millisecond)
}

// MinInterval: a key enqueued again right after its Reconcile started waits
// until the interval since that start has passed, with its reasons kept and
// "paced" added.
func TestMinIntervalHoldsAKeyBack(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	reasons := make(chan provenance.Reasons, 10)
	s := newScript(clk, func(int, string) (Result, error) { return Result{}, nil })
	// No Metrics: their ticker would be a timer of the fake clock too.
	c, err := New("paced", ReconcilerFunc[string](func(ctx context.Context, key string) (Result, error) {
		reasons <- ReasonsFrom(ctx)
		return s.Reconcile(ctx, key)
	}), Options[string]{Clock: clk, MinInterval: 10 * time.Second, Provenance: &Provenance{}})
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	startController(t, ctx, c)

	c.Enqueue("k")
	first := s.next(t)
	<-reasons
	waitIdle(t, c)
	c.Enqueue("k")
	// Taken by a worker and held back: nothing queued or running, and no second call.
	require.NoError(t, wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return c.Stats().Idle(), nil
	}))
	require.Len(t, s.Calls(), 1)
	stepUntilDue(t, ctx, clk, 10*time.Second)
	assert.Equal(t, 10*time.Second, s.next(t).at.Sub(first.at))
	why := <-reasons
	assert.Equal(t, 1, why.Count(provenance.TriggerManual), "the Enqueue that was held back: %v", why)
	assert.Equal(t, 1, why.Count(provenance.TriggerPaced), "%v", why)
}

// A Limiter shared by two controllers paces them together: with one token a
// second and a burst of one, the second controller's key waits for the next
// token after the first's took the only one; the wait is counted under the
// limiter's name.
func TestSharedLimiterPacesControllersTogether(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	api, err := NewLimiter("external-api", 1, 1)
	require.NoError(t, err)
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	scripts := map[string]*script[string]{}
	var ctrls []*Controller[string]
	for _, name := range []string{"a", "b"} {
		s := newScript(clk, func(int, string) (Result, error) { return Result{}, nil })
		c, err := New(name, Reconciler[string](s), Options[string]{Clock: clk, Limiters: []*Limiter{api}, Metrics: m})
		require.NoError(t, err)
		startController(t, ctx, c)
		scripts[name] = s
		ctrls = append(ctrls, c)
	}
	ctrls[0].Enqueue("x")
	first := scripts["a"].next(t)
	ctrls[1].Enqueue("y")
	require.NoError(t, wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return testutil.ToFloat64(m.paced.WithLabelValues("b", "external-api")) == 1, nil
	}), "b's key is held back for want of a token")
	require.Empty(t, scripts["b"].Calls())
	// An event for the held key brings it back early: it waits again for the token it took,
	// and takes no other (with a second one it would be due 2 s after the first).
	ctrls[1].Enqueue("y")
	require.NoError(t, wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return testutil.ToFloat64(m.paced.WithLabelValues("b", "external-api")) == 2, nil
	}), "held again, under the limiter's name")
	require.Empty(t, scripts["b"].Calls())
	clk.Step(time.Second)
	assert.Equal(t, time.Second, scripts["b"].next(t).at.Sub(first.at))
}

func TestLimiterTokens(t *testing.T) {
	l, err := NewLimiter("l", 2, 3)
	require.NoError(t, err)
	for range 3 {
		assert.Zero(t, l.take(t0), "the burst")
	}
	assert.Equal(t, 500*time.Millisecond, l.take(t0), "in debt: due at the rate")
	assert.Equal(t, time.Second, l.take(t0))
	assert.Zero(t, l.take(t0.Add(10*time.Second)), "refilled, at most burst")

	for _, bad := range []struct {
		name  string
		qps   float64
		burst int
	}{{"", 1, 1}, {"l", 0, 1}, {"l", -1, 1}, {"l", 1, 0}} {
		_, err := NewLimiter(bad.name, bad.qps, bad.burst)
		assert.ErrorIs(t, err, ErrInvalidOptions, "%+v", bad)
	}
	r := ReconcilerFunc[string](func(context.Context, string) (Result, error) { return Result{}, nil })
	_, err = New("x", Reconciler[string](r), Options[string]{MinInterval: -time.Second})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	_, err = New("x", Reconciler[string](r), Options[string]{Limiters: []*Limiter{nil}})
	assert.ErrorIs(t, err, ErrInvalidOptions)
}
