package controllertest_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/controller/controllertest"
)

// ctrlkit's controller is what RunController is for.
var _ controllertest.Controller = (*controller.Controller[controller.Key])(nil)

func TestRunControllerConvergesThroughInjectedFailures(t *testing.T) {
	const n = 20
	env := controllertest.NewFake(t)
	for i := range n {
		_, err := env.Client().CoreV1().ConfigMaps("demo").Create(env.Context(), configMap("demo", fmt.Sprintf("cm-%d", i)), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	env.FailWrites(40, "update")

	c, err := labelSeen(env.Env)
	require.NoError(t, err)
	env.RunController(env.Context(), c)
	env.WaitForQuiet(30 * time.Second)

	list, err := env.Client().CoreV1().ConfigMaps("demo").List(env.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, n)
	for _, cm := range list.Items {
		require.Equal(t, "true", cm.Labels["seen"], "%s was not reconciled", cm.Name)
	}
	require.Positive(t, env.Injected(), "the controller must have retried through failures")
}

// blocking is a Controller whose one reconcile runs until released, to observe WaitForQuiet
// waiting for in-flight work.
type blocking struct {
	release  chan struct{}
	inFlight atomic.Int32
	queued   atomic.Int32
	retries  atomic.Int32
	runErr   error
}

func (b *blocking) Name() string { return "blocking" }
func (b *blocking) Stats() controller.Stats {
	return controller.Stats{Queued: int(b.queued.Load()), InFlight: int(b.inFlight.Load()), Retrying: int(b.retries.Load())}
}
func (b *blocking) Run(ctx context.Context) error {
	if b.runErr != nil {
		return b.runErr
	}
	b.inFlight.Store(1)
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	b.inFlight.Store(0)
	<-ctx.Done()
	return nil
}

func TestWaitForQuietWaitsForInFlightWork(t *testing.T) {
	env := controllertest.NewFake(t)
	b := &blocking{release: make(chan struct{})}
	b.inFlight.Store(1) // busy from the start, before Run is scheduled
	stop := env.RunController(env.Context(), b)

	err := env.QuietContext(env.Context(), 50*time.Millisecond, 10*time.Millisecond)
	require.ErrorIs(t, err, controllertest.ErrNotQuiet)
	require.ErrorContains(t, err, "blocking: 0 queued, 1 in flight, 0 retrying")

	close(b.release)
	require.NoError(t, env.QuietContext(env.Context(), 10*time.Second, 10*time.Millisecond))
	require.NoError(t, stop())
	// Stopped controllers are no longer waited for.
	require.NoError(t, env.QuietContext(env.Context(), time.Second, time.Millisecond))
}

func TestWaitForQuietReportsAControllerThatStopped(t *testing.T) {
	env := controllertest.NewFake(t)
	boom := errors.New("boom")
	stop := env.RunController(env.Context(), &blocking{runErr: boom})
	err := env.QuietContext(env.Context(), 10*time.Second, 10*time.Millisecond)
	require.ErrorIs(t, err, controllertest.ErrNotQuiet)
	require.ErrorContains(t, err, "controller blocking stopped: boom")
	require.ErrorIs(t, stop(), boom, "stop hands back Run's error (and so the cleanup does not fail the test)")
}

func TestRunControllerStopsWithTheTest(t *testing.T) {
	b := &blocking{release: make(chan struct{})}
	t.Run("inner", func(t *testing.T) {
		env := controllertest.NewFake(t)
		env.RunController(context.Background(), b) // a context that never ends
	})
	// The inner test's cleanup cancelled the controller and waited for Run to return.
	require.Zero(t, b.Stats().InFlight)
}

func TestWaitForQuietWaitsForRetries(t *testing.T) {
	env := controllertest.NewFake(t)
	r := &blocking{release: make(chan struct{})}
	close(r.release) // nothing in flight
	r.retries.Store(1)
	env.RunController(env.Context(), r)

	err := env.QuietContext(env.Context(), 50*time.Millisecond, 10*time.Millisecond)
	require.ErrorIs(t, err, controllertest.ErrNotQuiet)
	require.ErrorContains(t, err, "1 retrying")

	r.retries.Store(0)
	require.NoError(t, env.QuietContext(env.Context(), 10*time.Second, 10*time.Millisecond))
}

// A key past its retries is retried only every SlowRetryInterval: WaitForQuiet does not wait for
// that, as it does not wait for a RequeueAfter, but it does wait for the fast retries before.
func TestWaitForQuietDoesNotWaitForSlowRetries(t *testing.T) {
	env := controllertest.NewFake(t)
	var calls atomic.Int32
	c, err := controller.New("failing", controller.ReconcilerFunc[string](func(context.Context, string) (controller.Result, error) {
		calls.Add(1)
		return controller.Result{}, errors.New("boom")
	}), controller.Options[string]{
		MaxRetries: 1, SlowRetryInterval: time.Hour,
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, time.Millisecond),
	})
	require.NoError(t, err)
	c.Enqueue("k")
	env.RunController(env.Context(), c)
	env.WaitForQuiet(10 * time.Second)
	require.Equal(t, controller.Stats{SlowRetrying: 1}, c.Stats())
	require.Equal(t, int32(2), calls.Load(), "the first call and its one fast retry, then quiet")
}
