package manager_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/leaderelection"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// configMapController is a controller of ConfigMaps on a factory view held
// until ctx ends, recording what it reconciles.
func configMapController(t *testing.T, ctx context.Context, f *informer.Factory, name string) (*controller.Controller[controller.Key], *testkit.Recorder[controller.Key]) {
	t.Helper()
	inf, err := informer.For[*corev1.ConfigMap](f.HeldUntil(ctx))
	require.NoError(t, err)
	rec := &testkit.Recorder[controller.Key]{}
	c, err := controller.New(name, rec, controller.Options[controller.Key]{})
	require.NoError(t, err)
	require.NoError(t, controller.Watch(c, inf, controller.EnqueueObject))
	return c, rec
}

func startManager(t *testing.T, mgr *manager.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	waitUntil(t, 10*time.Second, func() bool { code, _ := probe(mgr.ReadyzHandler()); return code == http.StatusOK }, "the manager runs")
}

// A controller added to a running Manager starts at once and is part of
// /readyz; Remove stops it (its informer, held only by it, is released) and
// frees its name, so a new controller of that name can be added: a
// controller stopped and started again inside one process, with a fresh
// queue.
func TestAddAfterStartAndRemove(t *testing.T) {
	env := testkit.NewFake(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	mgr, err := manager.New(manager.Options{Client: env.Client()})
	require.NoError(t, err)
	startManager(t, mgr)

	for round := range 3 {
		ctx, end := context.WithCancel(context.Background())
		c, rec := configMapController(t, ctx, mgr.Factory(), "late")
		require.NoError(t, mgr.Add(c), "round %d", round)
		waitUntil(t, 10*time.Second, func() bool { return rec.Count(controller.Key{Namespace: "ns", Name: "a"}) == 1 }, "the late controller reconciles")
		waitUntil(t, 10*time.Second, func() bool { code, _ := probe(mgr.ReadyzHandler()); return code == http.StatusOK }, "ready with it")
		assert.ErrorIs(t, mgr.Add(c), manager.ErrDuplicateName)

		require.NoError(t, mgr.Remove(context.Background(), "late"))
		assert.False(t, c.HasSynced(), "stopped: its handlers are gone")
		c.Enqueue(controller.Key{Namespace: "ns", Name: "b"})
		assert.Equal(t, 0, c.Stats().Queued, "a removed controller takes no keys")
		end()
	}
	assert.ErrorIs(t, mgr.Remove(context.Background(), "late"), manager.ErrUnknownRunnable)
}

// Remove before Start forgets the Runnable: Start does not run it.
func TestRemoveBeforeStart(t *testing.T) {
	env := testkit.NewFake(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	mgr, err := manager.New(manager.Options{Client: env.Client()})
	require.NoError(t, err)
	c, rec := configMapController(t, context.Background(), mgr.Factory(), "early")
	require.NoError(t, mgr.Add(c))
	require.NoError(t, mgr.Remove(context.Background(), "early"))
	startManager(t, mgr)
	assert.Equal(t, 0, rec.Count(controller.Key{Namespace: "ns", Name: "a"}))
}

// With leader election, a controller that needs it, added while this
// process leads, starts in the current term; /readyz names it until synced.
func TestAddAfterStartWhileLeading(t *testing.T) {
	env := testkit.NewFake(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	mgr, err := manager.New(manager.Options{Client: env.Client(), LeaderElection: &leaderelection.Config{
		Enabled: true, Namespace: "kube-system", Name: "dynamic-test", Identity: "replica-a",
	}})
	require.NoError(t, err)
	startManager(t, mgr)
	waitUntil(t, 30*time.Second, mgr.Elector().IsLeader, "leading")

	c, rec := configMapController(t, context.Background(), mgr.Factory(), "late-leader")
	require.NoError(t, mgr.Add(c))
	waitUntil(t, 10*time.Second, func() bool { return rec.Count(controller.Key{Namespace: "ns", Name: "a"}) == 1 }, "the late controller reconciles in the current term")
	require.NoError(t, mgr.Remove(context.Background(), "late-leader"))
	_, body := probe(mgr.ReadyzHandler())
	assert.False(t, strings.Contains(body, "late-leader"), body)
}

// Once Start is shutting down, Add refuses.
func TestAddAfterShutdownRefuses(t *testing.T) {
	env := testkit.NewFake(t)
	mgr, err := manager.New(manager.Options{Client: env.Client()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	waitUntil(t, 10*time.Second, func() bool { code, _ := probe(mgr.ReadyzHandler()); return code == http.StatusOK }, "the manager runs")
	cancel()
	require.NoError(t, <-done)
	c, _ := configMapController(t, context.Background(), mgr.Factory(), "too-late")
	assert.ErrorIs(t, mgr.Add(c), manager.ErrAlreadyStarted)
}
