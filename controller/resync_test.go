package controller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/provenance"
)

// A Watch's own resync period re-delivers every cached object to that Watch
// alone, as a resync, though the factory has none.
func TestWithResyncPeriod(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	client := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "1"}})
	f := informer.NewFactory(client, informer.Options{})
	cms, err := informer.For[*corev1.ConfigMap](f)
	require.NoError(t, err)
	reasons := make(chan provenance.Reasons, 10)
	r := ReconcilerFunc[Key](func(ctx context.Context, _ Key) (Result, error) {
		reasons <- ReasonsFrom(ctx)
		return Result{}, nil
	})
	c, err := New("resync", Reconciler[Key](r), Options[Key]{Clock: clk, Provenance: &Provenance{}})
	require.NoError(t, err)
	require.NoError(t, Watch(c, cms, EnqueueObject, WithResyncPeriod[*corev1.ConfigMap](time.Minute)))
	var other keyRecorder // a second controller on the same informer sees no resync
	c2, err := New("other", Reconciler[Key](&other), Options[Key]{Clock: clk})
	require.NoError(t, err)
	require.NoError(t, Watch(c2, cms, EnqueueObject))

	ctx, _ := testLogger(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f.Start(ctx)
	defer f.Shutdown()
	startController(t, ctx, c)
	startController(t, ctx, c2)
	key := Key{Namespace: "ns", Name: "a"}
	select {
	case why := <-reasons:
		assert.Equal(t, 1, why.Count(provenance.TriggerEvent), "the initial list: %v", why)
	case <-time.After(10 * time.Second):
		t.Fatal("no first Reconcile")
	}
	require.Eventually(t, func() bool { return other.count(key) == 1 }, 10*time.Second, time.Millisecond)
	require.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond, "the resync ticker")
	clk.Step(time.Minute)
	select {
	case why := <-reasons:
		assert.Equal(t, 1, why.Count(provenance.TriggerResync), "%v", why)
	case <-time.After(10 * time.Second):
		t.Fatal("no Reconcile after the resync period")
	}
	waitIdle(t, c2)
	assert.Equal(t, 1, other.count(key), "the other controller's handler had no resync")

	bad, err := New("bad", Reconciler[Key](r), Options[Key]{})
	require.NoError(t, err)
	assert.ErrorIs(t, Watch(bad, cms, EnqueueObject, WithResyncPeriod[*corev1.ConfigMap](-time.Second)), ErrInvalidOptions)
}
