package controller_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	kworkqueue "k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/provenance"
)

// heldCluster is a fake clientset whose ConfigMap watch the test drives by hand: nothing the
// clientset stores reaches the informer until the test sends it, as when an informer lags
// behind the controller's own writes.
type heldCluster struct {
	client *fake.Clientset
	mu     sync.Mutex
	w      *watch.FakeWatcher
	cms    informer.Informer[*corev1.ConfigMap]
	f      *informer.Factory
}

func newHeldCluster(t *testing.T, objs ...runtime.Object) *heldCluster {
	h := &heldCluster{client: fake.NewClientset(objs...)}
	h.client.PrependWatchReactor("configmaps", func(clienttesting.Action) (bool, watch.Interface, error) {
		w := watch.NewFakeWithChanSize(100, false)
		h.mu.Lock()
		h.w = w
		h.mu.Unlock()
		return true, w, nil
	})
	h.f = informer.NewFactory(h.client, informer.Options{})
	var err error
	h.cms, err = informer.For[*corev1.ConfigMap](h.f)
	require.NoError(t, err)
	return h
}

// watcher is the informer's current watch, once it has one.
func (h *heldCluster) watcher(t *testing.T) *watch.FakeWatcher {
	var w *watch.FakeWatcher
	require.Eventually(t, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		w = h.w
		return w != nil
	}, 10*time.Second, time.Millisecond)
	return w
}

func configMap(rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", ResourceVersion: rv}}
}

// reads records the resourceVersion each Reconcile read from the cache, and its reasons.
type reads struct {
	mu  sync.Mutex
	rvs []string
	why []provenance.Reasons
}

func (r *reads) add(rv string, why provenance.Reasons) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rvs = append(r.rvs, rv)
	r.why = append(r.why, why)
	return len(r.rvs)
}

func (r *reads) get() ([]string, []provenance.Reasons) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.rvs...), append([]provenance.Reasons(nil), r.why...)
}

func (r *reads) n() int { rvs, _ := r.get(); return len(rvs) }

// runFenced runs a controller over h's ConfigMaps whose first Reconcile "writes" the ConfigMap
// at resourceVersion 2 (fenced with fence) and asks to be requeued at once.
func runFenced(t *testing.T, h *heldCluster, opts controller.Options[controller.Key], fence func(ctx context.Context, cm *corev1.ConfigMap)) (*controller.Controller[controller.Key], *reads) {
	t.Helper()
	var r reads
	c, err := controller.New("fenced", controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
		cm, err := h.cms.Lister().Get(key.Namespace, key.Name)
		rv := "gone"
		if err == nil {
			rv = cm.ResourceVersion
		} else if !apierrors.IsNotFound(err) {
			return controller.Result{}, err
		}
		if r.add(rv, controller.ReasonsFrom(ctx)) == 1 {
			fence(ctx, cm)
			return controller.Result{Requeue: true}, nil
		}
		return controller.Result{}, nil
	}), opts)
	require.NoError(t, err)
	require.NoError(t, controller.Watch(c, h.cms, controller.EnqueueObject))
	h.run(t, c)
	return c, &r
}

// run starts h's informers and c until the test ends.
func (h *heldCluster) run(t *testing.T, c *controller.Controller[controller.Key]) {
	t.Helper()
	runWithInformers(t, h.f, c)
}

// runWithInformers starts f's informers and c until the test ends, then checks that Run
// returned no error.
func runWithInformers(t *testing.T, f *informer.Factory, c *controller.Controller[controller.Key]) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx)
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		f.Shutdown()
	})
}

// The write is fenced; the informer's watch is held back, so the requeued key waits instead of
// reading the object its own write replaced, and the event that delivers the write releases it.
func TestFenceHoldsTheKeyUntilTheInformerShowsTheWrite(t *testing.T) {
	h := newHeldCluster(t, configMap("1"))
	var fenced atomic.Bool
	c, r := runFenced(t, h, controller.Options[controller.Key]{Fences: &controller.Fences{TTL: time.Hour}, Provenance: &controller.Provenance{}},
		func(ctx context.Context, cm *corev1.ConfigMap) {
			fenced.Store(controller.Fence(ctx, h.cms, configMap("2")))
		})
	require.Eventually(t, func() bool { return c.Stats().Fenced == 1 }, 3*time.Second, time.Millisecond, "the requeued key is held")
	assert.True(t, fenced.Load())
	assert.Equal(t, 1, r.n(), "no Reconcile while the write is not in the cache")
	assert.False(t, c.Stats().Idle(), "a held key is not idle")

	h.watcher(t).Modify(configMap("2"))
	// The fence's release and the Watch's enqueue are two handlers of the same event, in
	// either order: wait until both reached a Reconcile, not only the first.
	require.Eventually(t, func() bool {
		_, why := r.get()
		events := 0
		for _, w := range why[1:] {
			events += w.Count(provenance.TriggerEvent)
		}
		return len(why) >= 2 && events >= 1 && c.Stats().Idle()
	}, 10*time.Second, time.Millisecond)
	rvs, why := r.get()
	for i, rv := range rvs[1:] {
		assert.Equal(t, "2", rv, "Reconcile %d read the stale object", i+2)
	}
	// The update event may be merged into the released key or come on its own.
	var requeues, fences, events int
	for _, w := range why[1:] {
		requeues += w.Count(provenance.TriggerRequeue)
		fences += w.Count(provenance.TriggerFence)
		events += w.Count(provenance.TriggerEvent)
	}
	// The release is a fence trigger when the fence table hands the key back; when the Watch's
	// enqueue of the same event gets there first, the event is the trigger and no fence shows.
	// The held Requeue is kept: on the released key, or on a key the event's enqueue
	// dispatched ahead of it.
	assert.Equal(t, []int{1, 1}, []int{requeues, events}, "%v", why)
	assert.LessOrEqual(t, fences, 1, "%v", why)
}

// Without fences the same controller reads the stale object: the test above tests something.
func TestWithoutFenceTheRequeueReadsTheStaleObject(t *testing.T) {
	h := newHeldCluster(t, configMap("1"))
	_, r := runFenced(t, h, controller.Options[controller.Key]{}, func(ctx context.Context, cm *corev1.ConfigMap) {
		assert.False(t, controller.Fence(ctx, h.cms, configMap("2")), "no fences without Options.Fences")
	})
	require.Eventually(t, func() bool { return r.n() == 2 }, 10*time.Second, time.Millisecond)
	rvs, _ := r.get()
	assert.Equal(t, []string{"1", "1"}, rvs)
}

// A delete releases a gone fence, and a version fence too (a delete is newer than any write).
func TestFenceReleasedByDelete(t *testing.T) {
	for _, gone := range []bool{true, false} {
		t.Run(map[bool]string{true: "gone", false: "version"}[gone], func(t *testing.T) {
			h := newHeldCluster(t, configMap("1"))
			c, r := runFenced(t, h, controller.Options[controller.Key]{Fences: &controller.Fences{TTL: time.Hour}},
				func(ctx context.Context, cm *corev1.ConfigMap) {
					if gone {
						assert.True(t, controller.FenceGone(ctx, h.cms, cm))
					} else {
						assert.True(t, controller.Fence(ctx, h.cms, configMap("2")))
					}
				})
			require.Eventually(t, func() bool { return c.Stats().Fenced == 1 }, 10*time.Second, time.Millisecond)
			h.watcher(t).Delete(configMap("3"))
			require.Eventually(t, func() bool { return r.n() >= 2 && c.Stats().Idle() }, 10*time.Second, time.Millisecond)
			rvs, _ := r.get()
			for _, rv := range rvs[1:] {
				assert.Equal(t, "gone", rv)
			}
		})
	}
}

// A relist that shows a newer version releases the fence: the watch broke (410 Gone) and the
// write's own event was never delivered.
func TestFenceReleasedByRelist(t *testing.T) {
	h := newHeldCluster(t, configMap("1"))
	c, r := runFenced(t, h, controller.Options[controller.Key]{Fences: &controller.Fences{TTL: time.Hour}},
		func(ctx context.Context, cm *corev1.ConfigMap) {
			assert.True(t, controller.Fence(ctx, h.cms, configMap("2")))
		})
	require.Eventually(t, func() bool { return c.Stats().Fenced == 1 }, 10*time.Second, time.Millisecond)
	// The server moved on to version 3; the informer learns it only by relisting.
	require.NoError(t, h.client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("configmaps"), configMap("3"), "ns"))
	w := h.watcher(t)
	h.mu.Lock()
	h.w = nil
	h.mu.Unlock()
	w.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old"})
	require.Eventually(t, func() bool { return r.n() >= 2 && c.Stats().Idle() }, 10*time.Second, time.Millisecond)
	rvs, _ := r.get()
	for _, rv := range rvs[1:] {
		assert.Equal(t, "3", rv)
	}
}

// A fence the informer never satisfies is dropped after the TTL: the key is reconciled, the
// timeout counted.
func TestFenceTTL(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	reg := prometheus.NewRegistry()
	m, err := controller.NewMetrics(reg)
	require.NoError(t, err)
	h := newHeldCluster(t, configMap("1"))
	c, r := runFenced(t, h, controller.Options[controller.Key]{
		Fences: &controller.Fences{TTL: time.Minute}, Clock: clk, Metrics: m, Provenance: &controller.Provenance{},
		RateLimiter: kworkqueue.NewTypedItemExponentialFailureRateLimiter[controller.Key](0, 0), // requeues at once on the fake clock
	}, func(ctx context.Context, cm *corev1.ConfigMap) {
		assert.True(t, controller.Fence(ctx, h.cms, configMap("2")))
	})
	require.Eventually(t, func() bool { return c.Stats().Fenced == 1 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, 1, r.n())
	require.Eventually(t, func() bool {
		clk.Step(time.Minute)
		return r.n() == 2
	}, 10*time.Second, time.Millisecond)
	rvs, why := r.get()
	assert.Equal(t, []string{"1", "1"}, rvs, "after the TTL the key is reconciled with what the cache has")
	assert.Equal(t, "timeout", why[1].Last.Source)
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP ctrlkit_controller_fence_timeouts_total Write fences released by their TTL instead of by the informer showing the write, per controller
# TYPE ctrlkit_controller_fence_timeouts_total counter
ctrlkit_controller_fence_timeouts_total{controller="fenced"} 1
`), "ctrlkit_controller_fence_timeouts_total"))
}

// A metadata-only informer serves fences too: the write was made with a typed client (a
// *corev1.Secret), the informer holds PartialObjectMetadata.
func TestFenceOnAMetadataInformer(t *testing.T) {
	scheme := metadatafake.NewTestScheme()
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	gvr := corev1.SchemeGroupVersion.WithResource("secrets")
	partial := func(rv string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", ResourceVersion: rv}}
	}
	meta := metadatafake.NewSimpleMetadataClient(scheme, partial("1"))
	f := informer.NewFactory(fake.NewClientset(), informer.Options{MetadataClient: meta})
	secrets, err := informer.ForMetadata(f, gvr)
	require.NoError(t, err)

	var r reads
	c, err := controller.New("fenced", controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
		s, err := secrets.Lister().Get(key.Namespace, key.Name)
		if err != nil {
			return controller.Result{}, err
		}
		if r.add(s.ResourceVersion, provenance.Reasons{}) == 1 {
			written := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", ResourceVersion: "2"}}
			assert.True(t, controller.Fence(ctx, secrets, written))
			return controller.Result{Requeue: true}, nil
		}
		return controller.Result{}, nil
	}), controller.Options[controller.Key]{Fences: &controller.Fences{TTL: time.Hour}})
	require.NoError(t, err)
	require.NoError(t, controller.Watch(c, secrets, controller.EnqueueObject))
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx)
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
		f.Shutdown()
	}()

	require.Eventually(t, func() bool { return c.Stats().Fenced == 1 }, 10*time.Second, time.Millisecond)
	_, err = meta.Resource(gvr).Namespace("ns").(metadatafake.MetadataClient).UpdateFake(partial("2"), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return r.n() >= 2 && c.Stats().Idle() }, 10*time.Second, time.Millisecond)
	rvs, _ := r.get()
	for _, rv := range rvs[1:] {
		assert.Equal(t, "2", rv)
	}
}

// A resourceVersion that is not an integer cannot be compared: nothing is fenced.
func TestFenceRefusesOpaqueResourceVersions(t *testing.T) {
	h := newHeldCluster(t, configMap("1"))
	var fenced atomic.Bool
	fenced.Store(true)
	_, r := runFenced(t, h, controller.Options[controller.Key]{Fences: &controller.Fences{TTL: time.Hour}},
		func(ctx context.Context, cm *corev1.ConfigMap) {
			fenced.Store(controller.Fence(ctx, h.cms, configMap("abc")))
		})
	require.Eventually(t, func() bool { return r.n() >= 2 }, 10*time.Second, time.Millisecond, "the requeue is not held")
	assert.False(t, fenced.Load())
}

// A fence on the informer of a WatchUntil holds the key until the watch ends (a cluster
// disengaged): then the key runs again and the controller keeps nothing of the informer.
func TestFenceOnAWatchUntilInformerEndsWithTheWatch(t *testing.T) {
	h := newHeldCluster(t, configMap("1"))
	var r reads
	c, err := controller.New("fenced", controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
		if r.add("", controller.ReasonsFrom(ctx)) == 1 {
			require.True(t, controller.Fence(ctx, h.cms, configMap("2")))
			return controller.Result{Requeue: true}, nil
		}
		return controller.Result{}, nil
	}), controller.Options[controller.Key]{Fences: &controller.Fences{TTL: time.Hour}})
	require.NoError(t, err)
	watchCtx, endWatch := context.WithCancel(context.Background())
	defer endWatch()
	require.NoError(t, controller.WatchUntil(watchCtx, c, h.cms, controller.EnqueueObject))
	h.run(t, c)
	require.Eventually(t, func() bool { return c.Stats().Fenced == 1 }, 10*time.Second, time.Millisecond, "the requeued key is held")
	assert.Equal(t, 1, r.n())

	endWatch()
	require.Eventually(t, func() bool { return r.n() == 2 && c.Stats().Fenced == 0 }, 10*time.Second, time.Millisecond,
		"the key runs again once the watch of the informer it waited on ended")
}
