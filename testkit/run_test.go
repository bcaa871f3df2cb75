package testkit_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kworkqueue "k8s.io/client-go/util/workqueue"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// ctrlkit's controller is what RunController is for.
var _ testkit.Controller = (*controller.Controller[controller.Key])(nil)

func TestRunControllerConvergesThroughInjectedFailures(t *testing.T) {
	const n = 20
	env := testkit.NewFake(t)
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
	env := testkit.NewFake(t)
	b := &blocking{release: make(chan struct{})}
	b.inFlight.Store(1) // busy from the start, before Run is scheduled
	stop := env.RunController(env.Context(), b)

	err := env.QuietContext(env.Context(), 50*time.Millisecond, 10*time.Millisecond)
	require.ErrorIs(t, err, testkit.ErrNotQuiet)
	require.ErrorContains(t, err, "blocking: 0 queued, 1 in flight, 0 retrying")

	close(b.release)
	require.NoError(t, env.QuietContext(env.Context(), 10*time.Second, 10*time.Millisecond))
	require.NoError(t, stop())
	// Stopped controllers are no longer waited for.
	require.NoError(t, env.QuietContext(env.Context(), time.Second, time.Millisecond))
}

func TestWaitForQuietReportsAControllerThatStopped(t *testing.T) {
	env := testkit.NewFake(t)
	boom := errors.New("boom")
	stop := env.RunController(env.Context(), &blocking{runErr: boom})
	err := env.QuietContext(env.Context(), 10*time.Second, 10*time.Millisecond)
	require.ErrorIs(t, err, testkit.ErrNotQuiet)
	require.ErrorContains(t, err, "controller blocking stopped: boom")
	require.ErrorIs(t, stop(), boom, "stop hands back Run's error (and so the cleanup does not fail the test)")
}

func TestRunControllerStopsWithTheTest(t *testing.T) {
	b := &blocking{release: make(chan struct{})}
	t.Run("inner", func(t *testing.T) {
		env := testkit.NewFake(t)
		env.RunController(context.Background(), b) // a context that never ends
	})
	// The inner test's cleanup cancelled the controller and waited for Run to return.
	require.Zero(t, b.Stats().InFlight)
}

func TestWaitForQuietWaitsForRetries(t *testing.T) {
	env := testkit.NewFake(t)
	r := &blocking{release: make(chan struct{})}
	close(r.release) // nothing in flight
	r.retries.Store(1)
	env.RunController(env.Context(), r)

	err := env.QuietContext(env.Context(), 50*time.Millisecond, 10*time.Millisecond)
	require.ErrorIs(t, err, testkit.ErrNotQuiet)
	require.ErrorContains(t, err, "1 retrying")

	r.retries.Store(0)
	require.NoError(t, env.QuietContext(env.Context(), 10*time.Second, 10*time.Millisecond))
}

// When the controllers do not become quiet, the error says why: which key a write fence holds
// (the informer, the object and the resourceVersion it waits for, since when) and which keys
// are retrying, not only how many (issue 28: "0 queued, 0 in flight, 0 retrying" named nothing).
func TestWaitForQuietNamesHeldAndRetryingKeys(t *testing.T) {
	env := testkit.NewFake(t, configMap("demo", "held"), configMap("demo", "failing"))
	cms, err := informer.For[*corev1.ConfigMap](env.Factory())
	require.NoError(t, err)
	c, err := controller.New("website", controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
		if key.Name == "failing" {
			return controller.Result{}, errors.New("boom")
		}
		// A write the informer never shows: a version far ahead of the fake cluster's.
		written := configMap(key.Namespace, key.Name)
		written.ResourceVersion = "999999"
		controller.Fence(ctx, cms, written)
		return controller.Result{Requeue: true}, nil
	}), controller.Options[controller.Key]{
		Fences:      &controller.Fences{TTL: time.Hour},
		RateLimiter: kworkqueue.NewTypedItemExponentialFailureRateLimiter[controller.Key](time.Millisecond, 10*time.Millisecond),
		Retry:       controller.BackoffForever(),
	})
	require.NoError(t, err)
	require.NoError(t, controller.Watch(c, cms, controller.EnqueueObject))
	env.RunController(env.Context(), c)
	require.Eventually(t, func() bool { st := c.Stats(); return st.Fenced == 1 && st.Retrying == 1 }, 10*time.Second, time.Millisecond)

	err = env.QuietContext(env.Context(), 50*time.Millisecond, 10*time.Millisecond)
	require.ErrorIs(t, err, testkit.ErrNotQuiet)
	msg := err.Error()
	require.Contains(t, msg, "1 held by write fences")
	require.Regexp(t, `key demo/held waits for demo/held at resourceVersion 999999 or newer in configmaps \(fenced since \d\d:\d\d:\d\d\.\d{3}\)`, msg)
	require.Regexp(t, `key demo/failing retrying \(\d+ retries\)`, msg)

	w := c.Waiting()
	require.Len(t, w.Fenced, 1)
	require.Equal(t, controller.Key{Namespace: "demo", Name: "held"}, w.Fenced[0].Key)
	require.Len(t, w.Fenced[0].Fences, 1)
	f := w.Fenced[0].Fences[0]
	require.Equal(t, "configmaps", f.Informer)
	require.Equal(t, "demo/held", f.Object.String())
	require.Equal(t, "999999", f.ResourceVersion)
	require.False(t, f.Gone)
	require.False(t, f.Since.IsZero())
	require.Len(t, w.Retrying, 1)
	require.Equal(t, controller.Key{Namespace: "demo", Name: "failing"}, w.Retrying[0].Key)
	require.Positive(t, w.Retrying[0].Retries)
}

// A key past its retries is retried only at its Every interval: WaitForQuiet does not wait for
// that, as it does not wait for a RequeueAfter, but it does wait for the fast retries before.
func TestWaitForQuietDoesNotWaitForSlowRetries(t *testing.T) {
	env := testkit.NewFake(t)
	var calls atomic.Int32
	c, err := controller.New("failing", controller.ReconcilerFunc[string](func(context.Context, string) (controller.Result, error) {
		calls.Add(1)
		return controller.Result{}, errors.New("boom")
	}), controller.Options[string]{
		Retry:       controller.Backoff(1, controller.Every(time.Hour)),
		RateLimiter: kworkqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, time.Millisecond),
	})
	require.NoError(t, err)
	c.Enqueue("k")
	env.RunController(env.Context(), c)
	env.WaitForQuiet(10 * time.Second)
	require.Equal(t, controller.Stats{SlowRetrying: 1}, c.Stats())
	require.Equal(t, int32(2), calls.Load(), "the first call and its one fast retry, then quiet")
}

// A debounced controller's key is work while its events settle: WaitForQuiet waits for its
// Reconcile instead of returning during the quiet time.
func TestWaitForQuietWaitsForDebouncedKeys(t *testing.T) {
	env := testkit.NewFake(t)
	cms, err := informer.For[*corev1.ConfigMap](env.Factory())
	require.NoError(t, err)
	var reconciled atomic.Int32
	r := controller.ReconcilerFunc[controller.Key](func(context.Context, controller.Key) (controller.Result, error) {
		reconciled.Add(1)
		return controller.Result{}, nil
	})
	c, err := controller.New("debounced", controller.Reconciler[controller.Key](r), controller.Options[controller.Key]{Debounce: 300 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, controller.Watch(c, cms, controller.EnqueueObject))
	env.RunController(env.Context(), c)
	env.WaitForQuiet(10 * time.Second)
	_, err = env.Client().CoreV1().ConfigMaps("demo").Create(env.Context(), configMap("demo", "cm"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return c.Stats().Settling == 1 }, 10*time.Second, time.Millisecond)
	env.WaitForQuiet(10 * time.Second)
	require.Equal(t, int32(1), reconciled.Load(), "WaitForQuiet returned before the debounced Reconcile")
}
