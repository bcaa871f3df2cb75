package informer

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
)

// lifetimeFixture is a started factory over a fake clientset holding one
// ConfigMap, with a fake clock for the release grace.
type lifetimeFixture struct {
	t     *testing.T
	f     *Factory
	clock *clocktesting.FakeClock
	ctx   context.Context
}

func newLifetimeFixture(t *testing.T) *lifetimeFixture {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	clk := clocktesting.NewFakeClock(time.Now())
	f := NewFactory(newClient(cm), Options{Clock: clk, ReleaseGrace: time.Minute})
	t.Cleanup(f.Shutdown)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f.Start(ctx)
	return &lifetimeFixture{t: t, f: f, clock: clk, ctx: ctx}
}

// configMaps asks view for the ConfigMap informer and waits for its cache.
func (x *lifetimeFixture) configMaps(view *Factory) Informer[*corev1.ConfigMap] {
	x.t.Helper()
	inf, err := For[*corev1.ConfigMap](view)
	require.NoError(x.t, err)
	require.NoError(x.t, WaitForCacheSync(x.ctx, inf))
	return inf
}

func (x *lifetimeFixture) served() bool {
	return x.f.serves(registryKey{source: sourceTyped, typ: reflect.TypeFor[*corev1.ConfigMap]()})
}

// serves reports whether informer key is registered (not released).
func (f *Factory) serves(key registryKey) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.informers[key]
	return ok
}

// expire waits for the grace timer of a released informer and runs it out.
func (x *lifetimeFixture) expire() {
	x.t.Helper()
	require.NoError(x.t, wait.PollUntilContextTimeout(x.ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return x.clock.HasWaiters(), nil
	}), "the release grace timer")
	x.clock.Step(time.Minute)
}

func (x *lifetimeFixture) waitStopped(inf Informer[*corev1.ConfigMap]) {
	x.t.Helper()
	require.NoError(x.t, wait.PollUntilContextTimeout(x.ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return !x.served() && inf.Informer().IsStopped(), nil
	}), "the released informer stops and leaves the factory")
}

func TestHeldInformerStopsAfterItsLastHolderAndGrace(t *testing.T) {
	x := newLifetimeFixture(t)
	ctx1, end1 := context.WithCancel(context.Background())
	ctx2, end2 := context.WithCancel(context.Background())
	inf := x.configMaps(x.f.HeldUntil(ctx1))
	require.Same(t, inf, x.configMaps(x.f.HeldUntil(ctx2)), "one informer for both views")
	got, err := inf.Lister().Get("ns", "a")
	require.NoError(t, err)
	require.Equal(t, "a", got.Name)

	end1()
	end2()
	x.expire()
	x.waitStopped(inf)

	// Asked for again, it is a new informer with a fresh list.
	again := x.configMaps(x.f.HeldUntil(context.Background()))
	require.NotSame(t, inf, again)
	_, err = again.Lister().Get("ns", "a")
	require.NoError(t, err)
}

func TestHeldInformerKeptWhileAnotherViewHoldsIt(t *testing.T) {
	x := newLifetimeFixture(t)
	ctx1, end1 := context.WithCancel(context.Background())
	inf := x.configMaps(x.f.HeldUntil(ctx1))
	x.configMaps(x.f.HeldUntil(context.Background()))
	end1()
	require.NoError(t, wait.PollUntilContextTimeout(x.ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		x.f.mu.Lock()
		defer x.f.mu.Unlock()
		return len(x.f.lives[registryKey{source: sourceTyped, typ: reflect.TypeFor[*corev1.ConfigMap]()}].holders) == 1, nil
	}), "the first view's hold ends")
	x.clock.Step(time.Hour)
	require.False(t, x.clock.HasWaiters(), "no stop is pending: the second view holds it")
	require.True(t, x.served())
	require.False(t, inf.Informer().IsStopped())
}

func TestHeldInformerHeldAgainWithinTheGraceIsKept(t *testing.T) {
	x := newLifetimeFixture(t)
	ctx1, end1 := context.WithCancel(context.Background())
	inf := x.configMaps(x.f.HeldUntil(ctx1))
	end1()
	require.NoError(t, wait.PollUntilContextTimeout(x.ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return x.clock.HasWaiters(), nil
	}))
	require.Same(t, inf, x.configMaps(x.f.HeldUntil(context.Background())), "the warm cache is reused")
	x.clock.Step(time.Hour)
	require.True(t, x.served())
	require.False(t, inf.Informer().IsStopped())
}

func TestFactoryItselfMakesAHeldInformerPermanent(t *testing.T) {
	x := newLifetimeFixture(t)
	ctx1, end1 := context.WithCancel(context.Background())
	inf := x.configMaps(x.f.HeldUntil(ctx1))
	require.Same(t, inf, x.configMaps(x.f))
	end1()
	x.clock.Step(time.Hour)
	require.True(t, x.served())
	require.False(t, inf.Informer().IsStopped())
}

func TestInformerOfTheFactoryIsNeverReleasedByAView(t *testing.T) {
	x := newLifetimeFixture(t)
	inf := x.configMaps(x.f)
	ctx1, end1 := context.WithCancel(context.Background())
	require.Same(t, inf, x.configMaps(x.f.HeldUntil(ctx1)))
	end1()
	x.clock.Step(time.Hour)
	require.True(t, x.served())
}

func TestShutdownDuringTheGraceStopsEverything(t *testing.T) {
	x := newLifetimeFixture(t)
	ctx1, end1 := context.WithCancel(context.Background())
	inf := x.configMaps(x.f.HeldUntil(ctx1))
	end1()
	require.NoError(t, wait.PollUntilContextTimeout(x.ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return x.clock.HasWaiters(), nil
	}))
	x.f.Shutdown()
	require.True(t, inf.Informer().IsStopped())
}

func TestViewOfAViewHoldsUntilEitherEnds(t *testing.T) {
	x := newLifetimeFixture(t)
	outer, endOuter := context.WithCancel(context.Background())
	inf := x.configMaps(x.f.HeldUntil(outer).HeldUntil(context.Background()))
	endOuter()
	x.expire()
	x.waitStopped(inf)
}

// A controller restarted many times on views of its terms leaves nothing
// running: each term's informer stops (goleak in TestMain checks the
// goroutines once the factory shut down; this checks the factory's own
// bookkeeping between terms).
func TestManyTermsLeaveNothingBehind(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	f := NewFactory(newClient(cm), Options{ReleaseGrace: -1})
	t.Cleanup(f.Shutdown)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.Start(ctx)
	for range 100 {
		term, end := context.WithCancel(ctx)
		inf, err := For[*corev1.ConfigMap](f.HeldUntil(term))
		require.NoError(t, err)
		require.NoError(t, WaitForCacheSync(ctx, inf))
		end()
		require.NoError(t, wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return inf.Informer().IsStopped(), nil
		}))
	}
	require.NoError(t, wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.informers) == 0 && len(f.lives) == 0 && len(f.scoped) == 0, nil
	}))
}

// An informer following a NamespaceSet, held by a view, stops with its
// namespaces' informers once released; the set changing afterwards does
// nothing (TestMain's goleak checks that no namespace informer is left).
func TestHeldInformerOfANamespaceSetStops(t *testing.T) {
	x := newLifetimeFixture(t)
	set, err := NewNamespaceSet("ns")
	require.NoError(t, err)
	ctx1, end1 := context.WithCancel(context.Background())
	inf, err := For[*corev1.ConfigMap](x.f.HeldUntil(ctx1), InNamespaceSet[*corev1.ConfigMap](set))
	require.NoError(t, err)
	require.NoError(t, WaitForCacheSync(x.ctx, inf))
	_, err = inf.Lister().Get("ns", "a")
	require.NoError(t, err)
	end1()
	x.expire()
	require.NoError(t, wait.PollUntilContextTimeout(x.ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return !x.served(), nil
	}), "the released informer leaves the factory")
	require.NoError(t, set.Add("other"))
	x.f.mu.Lock()
	defer x.f.mu.Unlock()
	require.Empty(t, x.f.scoped, "its namespaces' factories are gone")
}
