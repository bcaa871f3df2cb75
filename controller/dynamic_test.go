package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/predicate"
)

// A WatchUntil added while the controller runs delivers the informer's
// cached objects at once, stops at its context's end, is registered again
// by a later Run while its context lasts, and never holds a Run back on an
// informer that does not sync.
func TestWatchUntilComesAndGoesWhileRunning(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(replicaSet("ns", "a"))
	f := informer.NewFactory(client, informer.Options{})
	defer f.Shutdown()
	rsInf, err := informer.For[*appsv1.ReplicaSet](f)
	require.NoError(t, err)
	f.Start(ctx)
	require.NoError(t, f.WaitForCacheSync(ctx))

	var rec keyRecorder
	c, err := New[Key]("dyn", &rec, Options[Key]{})
	require.NoError(t, err)
	stop := startController(t, ctx, c)
	require.Eventually(t, c.HasSynced, 10*time.Second, time.Millisecond, "no watch of its own: synced at once")

	wctx, endWatch := context.WithCancel(ctx)
	require.NoError(t, WatchUntil(wctx, c, rsInf, EnqueueObject[*appsv1.ReplicaSet]))
	a := Key{Namespace: "ns", Name: "a"}
	require.Eventually(t, func() bool { return rec.count(a) == 1 }, 10*time.Second, time.Millisecond, "the cached object arrives as an add")

	_, err = client.AppsV1().ReplicaSets("ns").Create(ctx, replicaSet("ns", "b"), metav1.CreateOptions{})
	require.NoError(t, err)
	b := Key{Namespace: "ns", Name: "b"}
	require.Eventually(t, func() bool { return rec.count(b) == 1 }, 10*time.Second, time.Millisecond)

	// A second Run registers it again: its cached objects arrive again.
	stop()
	startController(t, ctx, c)
	require.Eventually(t, func() bool { return rec.count(a) == 2 && rec.count(b) == 2 }, 10*time.Second, time.Millisecond)

	endWatch()
	require.Eventually(t, func() bool {
		c.dynamic.mu.Lock()
		defer c.dynamic.mu.Unlock()
		return len(c.dynamic.set) == 0
	}, 10*time.Second, time.Millisecond, "removed once its context ended")
	_, err = client.AppsV1().ReplicaSets("ns").Create(ctx, replicaSet("ns", "c"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { objs, err := rsInf.Lister().List(labelsEverything()); return err == nil && len(objs) == 3 }, 10*time.Second, time.Millisecond)
	waitIdle(t, c)
	assert.Zero(t, rec.count(Key{Namespace: "ns", Name: "c"}), "the watch ended with its context")

	// One that never syncs (its factory never started) does not hold a Run.
	g := informer.NewFactory(fake.NewClientset(), informer.Options{})
	defer g.Shutdown()
	never, err := informer.For[*appsv1.ReplicaSet](g)
	require.NoError(t, err)
	c2, err := New[Key]("dyn2", &rec, Options[Key]{})
	require.NoError(t, err)
	require.NoError(t, WatchUntil(ctx, c2, never, EnqueueObject[*appsv1.ReplicaSet]))
	startController(t, ctx, c2)
	require.Eventually(t, c2.HasSynced, 10*time.Second, time.Millisecond)
}

func TestWatchUntilRefusesBadInput(t *testing.T) {
	f := informer.NewFactory(fake.NewClientset(), informer.Options{})
	defer f.Shutdown()
	rsInf, err := informer.For[*appsv1.ReplicaSet](f)
	require.NoError(t, err)
	c, err := New[Key]("bad", &keyRecorder{}, Options[Key]{})
	require.NoError(t, err)
	ctx := context.Background()
	assert.ErrorIs(t, WatchUntil(ctx, c, rsInf, EnqueueObject[*appsv1.ReplicaSet], WithResyncPeriod[*appsv1.ReplicaSet](time.Minute)), ErrInvalidOptions)
	assert.ErrorIs(t, WatchUntil(ctx, c, rsInf, nil), ErrInvalidOptions)
	assert.ErrorIs(t, WatchUntil[*appsv1.ReplicaSet](ctx, c, nil, EnqueueObject[*appsv1.ReplicaSet]), ErrInvalidOptions)
	assert.ErrorIs(t, WatchUntil(ctx, c, rsInf, EnqueueObject[*appsv1.ReplicaSet], WithPredicates[*appsv1.ReplicaSet](nil)), predicate.ErrInvalidPredicate)
	var none *Controller[Key]
	var oe *OptionsError
	assert.True(t, errors.As(WatchUntil(ctx, none, rsInf, EnqueueObject[*appsv1.ReplicaSet]), &oe))
	done, cancel := context.WithCancel(ctx)
	cancel()
	assert.NoError(t, WatchUntil(done, c, rsInf, EnqueueObject[*appsv1.ReplicaSet]), "a context already over adds nothing")
}
