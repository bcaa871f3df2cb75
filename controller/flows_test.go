package controller

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kworkqueue "k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"
)

// orderRecorder is a Reconciler that records the order of its keys; the
// first key blocks until release is closed, so that the test can queue the
// rest while the one worker is busy.
type orderRecorder struct {
	mu      sync.Mutex
	order   []Key
	started chan struct{}
	release chan struct{}
}

func newOrderRecorder() *orderRecorder {
	return &orderRecorder{started: make(chan struct{}), release: make(chan struct{})}
}

func (r *orderRecorder) Reconcile(_ context.Context, k Key) (Result, error) {
	r.mu.Lock()
	r.order = append(r.order, k)
	first := len(r.order) == 1
	r.mu.Unlock()
	if first {
		close(r.started)
		<-r.release
	}
	return Result{}, nil
}

func (r *orderRecorder) keys() []Key {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Key(nil), r.order...)
}

// With Flows, a namespace's burst does not hold another namespace's key
// behind it: the quiet namespace's key is the second reconciled, not the
// 101st.
func TestFlowsServeNamespacesInTurn(t *testing.T) {
	r := newOrderRecorder()
	c, err := New("flows", Reconciler[Key](r), Options[Key]{Flows: FlowByNamespace})
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	startController(t, ctx, c)
	c.Enqueue(Key{Namespace: "noisy", Name: "first"})
	<-r.started
	for i := range 100 {
		c.Enqueue(Key{Namespace: "noisy", Name: strconv.Itoa(i)})
	}
	c.Enqueue(Key{Namespace: "quiet", Name: "one"})
	close(r.release)
	require.Eventually(t, func() bool { return len(r.keys()) == 102 }, 10*time.Second, time.Millisecond)
	got := r.keys()
	assert.Equal(t, Key{Namespace: "noisy", Name: "0"}, got[1], "the noisy flow's turn")
	assert.Equal(t, Key{Namespace: "quiet", Name: "one"}, got[2], "then the quiet flow's")
}

// With Aging, a key below a busy priority moves up after the bound: it is
// reconciled before a key of the higher priority queued after the move.
func TestAgingLetsALowPriorityKeyThrough(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	r := newOrderRecorder()
	c, err := New("aging", Reconciler[Key](r), Options[Key]{Clock: clk, Aging: time.Minute})
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	startController(t, ctx, c)
	c.Enqueue(Key{Name: "busy"})
	<-r.started
	low := -1
	c.q.Load().add(Key{Name: "low"}, addSpec{priority: &low})
	c.Enqueue(Key{Name: "h1"})
	clk.Step(time.Minute + 15*time.Second)
	c.Stats() // ages the queue now
	c.Enqueue(Key{Name: "h2"})
	close(r.release)
	require.Eventually(t, func() bool { return len(r.keys()) == 4 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, []Key{{Name: "busy"}, {Name: "h1"}, {Name: "low"}, {Name: "h2"}}, r.keys())
}

func TestFlowOptions(t *testing.T) {
	r := ReconcilerFunc[string](func(context.Context, string) (Result, error) { return Result{}, nil })
	byLen := func(k string) string { return strconv.Itoa(len(k)) }
	q := kworkqueue.NewTypedRateLimitingQueue(kworkqueue.DefaultTypedControllerRateLimiter[string]())
	defer q.ShutDown()
	for _, o := range []Options[string]{
		{FlowWeights: func(string) int { return 2 }},
		{Aging: -time.Second},
		{Flows: byLen, Queue: q},
		{Aging: time.Second, Queue: q},
	} {
		_, err := New("x", Reconciler[string](r), o)
		assert.ErrorIs(t, err, ErrInvalidOptions, "%+v", o)
	}
}
