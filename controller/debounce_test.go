package controller

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/provenance"
)

// debounced runs a controller with Debounce quiet and DebounceMaxWait
// maxWait over a ConfigMap informer holding ns/a, on a fake clock.
func debounced(t *testing.T, quiet, maxWait time.Duration) (ctx context.Context, c *Controller[Key], s *script[Key], clk *testingclock.FakeClock, update func()) {
	t.Helper()
	clk = testingclock.NewFakeClock(t0)
	client := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	f := informer.NewFactory(client, informer.Options{})
	cms, err := informer.For[*corev1.ConfigMap](f)
	require.NoError(t, err)
	s = newScript(clk, func(int, Key) (Result, error) { return Result{}, nil })
	// No Metrics: their ticker would be a timer of the fake clock too.
	c, err = New("debounced", Reconciler[Key](s), Options[Key]{Clock: clk, Debounce: quiet, DebounceMaxWait: maxWait})
	require.NoError(t, err)
	require.NoError(t, Watch(c, cms, EnqueueObject))
	ctx, _ = testLogger(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	f.Start(ctx)
	t.Cleanup(f.Shutdown)
	startController(t, ctx, c)
	n := 0
	update = func() {
		t.Helper()
		n++
		_, err := client.CoreV1().ConfigMaps("ns").Update(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Data: map[string]string{"n": strconv.Itoa(n)},
		}, metav1.UpdateOptions{})
		require.NoError(t, err)
		waitForEvent(t, c, clk)
	}
	waitForEvent(t, c, clk) // the initial list
	return ctx, c, s, clk, update
}

// waitForEvent waits until the debouncer recorded an event for ns/a at the
// clock's time, then until the controller is settled, so the next step of
// the clock happens after everything due at this one.
func waitForEvent(t *testing.T, c *Controller[Key], clk *testingclock.FakeClock) {
	t.Helper()
	key := Key{Namespace: "ns", Name: "a"}
	require.Eventually(t, func() bool {
		d := c.deb.Load()
		if d == nil {
			return false
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.pending[key].last.Equal(clk.Now())
	}, 10*time.Second, time.Millisecond, "the event at %v", clk.Now())
	settle(t, c)
}

// settle waits until c has nothing ready or running for a few readings in a
// row (Stats reads the queue's length, which hands out what is due).
func settle(t *testing.T, c *Controller[Key]) {
	t.Helper()
	calm := 0
	require.Eventually(t, func() bool {
		if c.Stats().Idle() {
			calm++
		} else {
			calm = 0
		}
		return calm >= 5
	}, 10*time.Second, time.Millisecond)
}

// Events keep coming every 5 s, within the quiet time of 10 s: the key is
// reconciled once, at the cap (30 s after the first event), not before and
// not never; once the events stop, the last of them is reconciled after the
// quiet time.
func TestDebounceCapsTheWait(t *testing.T) {
	_, c, s, clk, update := debounced(t, 10*time.Second, 30*time.Second)
	// The initial list is an event too: reconciled after the quiet time.
	clk.Step(10 * time.Second)
	assert.Equal(t, 10*time.Second, s.next(t).at.Sub(t0))
	settle(t, c)

	start := clk.Now()
	update()
	assert.Equal(t, 1, c.Stats().Settling, "the key's events are settling")
	for range 7 { // events at start+5s ... start+35s
		clk.Step(5 * time.Second)
		settle(t, c)
		update()
	}
	calls := s.Calls()
	require.Len(t, calls, 2, "one Reconcile during the storm")
	assert.Equal(t, 30*time.Second, calls[1].at.Sub(start), "at the cap")
	s.next(t) // that call's report

	// Quiet from start+35s: the events since the capped Reconcile are
	// reconciled 10 s after the last.
	clk.Step(9 * time.Second)
	settle(t, c)
	assert.Len(t, s.Calls(), 2, "before the quiet time")
	clk.Step(time.Second)
	assert.Equal(t, 45*time.Second, s.next(t).at.Sub(start))
	settle(t, c)
	assert.Zero(t, c.Stats().Settling, "no burst left once reconciled")
}

// A held key's wait is counted under pace="debounce", and its reasons say
// it was paced.
func TestDebounceIsVisible(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	d := newDebouncer[string](clk, 10*time.Second, time.Minute)
	c := &Controller[string]{name: "c", clock: clk, provenance: true}
	c.cm = m.forController("c", 1)
	s := newPaceStep(c, d)
	q := &recordingQueue{}
	d.event("k")
	clk.Step(5 * time.Second)
	w := &work[string]{key: "k", q: q}
	assert.False(t, s.enter(w), "held: events are not quiet yet")
	require.Len(t, q.adds, 1)
	assert.Equal(t, provenance.TriggerPaced, q.adds[0].trigger.Kind)
	assert.Equal(t, 5*time.Second, q.adds[0].trigger.After)
	assert.Equal(t, 1.0, testutil.ToFloat64(m.paced.WithLabelValues("c", "debounce")))
	clk.Step(5 * time.Second)
	assert.True(t, s.enter(&work[string]{key: "k", q: q}), "quiet for 10 s")
}

func TestDebounceOptions(t *testing.T) {
	r := ReconcilerFunc[string](func(context.Context, string) (Result, error) { return Result{}, nil })
	for _, o := range []Options[string]{
		{Debounce: -time.Second},
		{DebounceMaxWait: time.Second},
		{Debounce: 2 * time.Second, DebounceMaxWait: time.Second},
	} {
		_, err := New("x", Reconciler[string](r), o)
		assert.ErrorIs(t, err, ErrInvalidOptions, "%+v", o)
	}
	c, err := New("x", Reconciler[string](r), Options[string]{Debounce: time.Second})
	require.NoError(t, err)
	assert.Equal(t, 10*time.Second, c.debounceMax, "default cap")
}

// The bursts of keys that never reach the pace step (an Admission dropped
// them) are swept once over.
func TestDebounceSweepsAbandonedBursts(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	d := newDebouncer[int](clk, time.Second, 10*time.Second)
	for i := range 1024 {
		d.event(i)
	}
	clk.Step(12 * time.Second)
	d.event(-1)
	assert.Len(t, d.pending, 1, "only the new burst is left")
}

// recordingQueue records the adds of a step under test.
type recordingQueue struct {
	queue[string]
	adds []addSpec
}

func (q *recordingQueue) add(_ string, a addSpec) { q.adds = append(q.adds, a) }
