package main

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/retry"
	kworkqueue "k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/examples/internal/kubelet"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit"
)

const ns = "default"

// testEnv is a fake cluster with API-server writes (testkit's fake, with its fault
// injection), the controller under test, and helpers.
type testEnv struct {
	*testkit.FakeEnv
	t   *testing.T
	ctx context.Context
	rsc *ReplicaSetController

	mu      sync.Mutex
	everPod map[types.UID]bool // every Pod the informer ever saw: extra creates show up here
}

type envOptions struct {
	opts    Options
	kubelet bool // run a simulated kubelet that makes Pods ready at once
	noStart bool // build the controller but do not run it (tests that call Reconcile)
	// beforeInformers runs before the controller asks for its informers, to install watch
	// reactors.
	beforeInformers func(*testkit.FakeEnv)
}

func newTestEnv(t *testing.T, eo envOptions) *testEnv {
	t.Helper()
	env := testkit.NewFake(t)
	e := &testEnv{FakeEnv: env, t: t, ctx: env.Context(), everPod: map[types.UID]bool{}}
	if eo.beforeInformers != nil {
		eo.beforeInformers(env)
	}
	if eo.opts.RateLimiter == nil {
		// Retries within the quiet period of WaitForQuiet, which does not count keys in backoff.
		eo.opts.RateLimiter = kworkqueue.NewTypedItemExponentialFailureRateLimiter[controller.Key](time.Millisecond, 20*time.Millisecond)
	}
	rsc, err := NewReplicaSetController(env.Factory(), env.Client(), eo.opts)
	require.NoError(t, err)
	e.rsc = rsc
	pods, err := informer.For[*corev1.Pod](env.Factory())
	require.NoError(t, err)
	_, err = pods.AddHandler(informer.HandlerFuncs[*corev1.Pod]{OnAdd: func(p *corev1.Pod, _ bool) {
		e.mu.Lock()
		e.everPod[p.UID] = true
		e.mu.Unlock()
	}})
	require.NoError(t, err)
	env.Sync()
	if eo.kubelet {
		k, err := kubelet.New(env.Client(), kubelet.Options{StartupDelay: -1})
		require.NoError(t, err)
		env.RunController(e.ctx, k)
	}
	if !eo.noStart {
		env.RunController(e.ctx, rsc)
	}
	return e
}

// podsEverSeen is how many distinct Pods the informer has seen since the start.
func (e *testEnv) podsEverSeen() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.everPod)
}

// wait5ms is how the tests' own writes retry.
var wait5ms = wait.Backoff{Steps: 100, Duration: 5 * time.Millisecond, Factor: 1}

func isConflict(err error) bool { return apierrors.IsConflict(err) }

// assertEverSeen checks that exactly n distinct Pods were ever created. The counting handler is
// a listener of its own on the Pod informer, which may trail the controller's by a moment.
func (e *testEnv) assertEverSeen(n int, msg string) {
	e.t.Helper()
	require.Eventually(e.t, func() bool { return e.podsEverSeen() >= n }, 10*time.Second, time.Millisecond, msg)
	assert.Equal(e.t, n, e.podsEverSeen(), msg)
}

// retryInjected repeats fn while it fails with an injected error: the test's own writes must
// get through even when the fake fails a share of them.
func retryInjected(fn func() error) error {
	return retry.OnError(wait5ms, func(err error) bool {
		return errors.Is(err, testkit.ErrInjected) || isConflict(err)
	}, fn)
}

func (e *testEnv) createRS(name string, replicas int32) *appsv1.ReplicaSet {
	e.t.Helper()
	var rs *appsv1.ReplicaSet
	require.NoError(e.t, retryInjected(func() (err error) {
		rs, err = e.Client().AppsV1().ReplicaSets(ns).Create(e.ctx, replicaSet(ns, name, "", replicas), metav1.CreateOptions{})
		return err
	}))
	return rs
}

func (e *testEnv) scale(name string, replicas int32) {
	e.t.Helper()
	require.NoError(e.t, retryInjected(func() error {
		rs, err := e.Client().AppsV1().ReplicaSets(ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		rs.Spec.Replicas = ptr.To(replicas)
		_, err = e.Client().AppsV1().ReplicaSets(ns).Update(e.ctx, rs, metav1.UpdateOptions{})
		return err
	}))
}

// waitCached waits until the informer holds ReplicaSet name at its current resourceVersion,
// for tests that call Reconcile themselves.
func (e *testEnv) waitCached(name string) {
	e.t.Helper()
	want := e.getRS(name).ResourceVersion
	require.Eventually(e.t, func() bool {
		rs, err := e.rsc.rss.Lister().Get(ns, name)
		return err == nil && rs.ResourceVersion == want
	}, 10*time.Second, time.Millisecond)
}

// waitPodsCached waits until the informer holds every Pod of the API at its current
// resourceVersion, so a controller started next sees the world the test built.
func (e *testEnv) waitPodsCached() {
	e.t.Helper()
	list, err := e.Client().CoreV1().Pods(ns).List(e.ctx, metav1.ListOptions{})
	require.NoError(e.t, err)
	require.Eventually(e.t, func() bool {
		for _, p := range list.Items {
			if c, err := e.rsc.pods.Lister().Get(ns, p.Name); err != nil || c.ResourceVersion != p.ResourceVersion {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond)
}

func (e *testEnv) getRS(name string) *appsv1.ReplicaSet {
	e.t.Helper()
	rs, err := e.Client().AppsV1().ReplicaSets(ns).Get(e.ctx, name, metav1.GetOptions{})
	require.NoError(e.t, err)
	return rs
}

// createPod creates p and then, as a kubelet would, writes the status it was given.
func (e *testEnv) createPod(p *corev1.Pod) *corev1.Pod {
	e.t.Helper()
	created, err := e.Client().CoreV1().Pods(ns).Create(e.ctx, p, metav1.CreateOptions{})
	require.NoError(e.t, err)
	if p.Status.Phase != "" {
		created.Status = p.Status
		created, err = e.Client().CoreV1().Pods(ns).UpdateStatus(e.ctx, created, metav1.UpdateOptions{})
		require.NoError(e.t, err)
	}
	return created
}

func (e *testEnv) getPod(name string) *corev1.Pod {
	e.t.Helper()
	p, err := e.Client().CoreV1().Pods(ns).Get(e.ctx, name, metav1.GetOptions{})
	require.NoError(e.t, err)
	return p
}

// ownedPods lists the active Pods rs controls, from the API.
func (e *testEnv) ownedPods(rs *appsv1.ReplicaSet) []corev1.Pod {
	e.t.Helper()
	list, err := e.Client().CoreV1().Pods(ns).List(e.ctx, metav1.ListOptions{})
	require.NoError(e.t, err)
	var out []corev1.Pod
	for _, p := range list.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == rs.UID && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// assertConverged checks that rs has exactly spec.replicas Pods and a status that says so.
func (e *testEnv) assertConverged(name string, ready bool) {
	e.t.Helper()
	rs := e.getRS(name)
	want := *rs.Spec.Replicas
	assert.Len(e.t, e.ownedPods(rs), int(want), "pods of %s", name)
	st := rs.Status
	assert.Equal(e.t, rs.Generation, st.ObservedGeneration, "observedGeneration of %s", name)
	assert.Equal(e.t, want, st.Replicas, "status.replicas of %s", name)
	if ready {
		assert.Equal(e.t, want, st.ReadyReplicas, "status.readyReplicas of %s", name)
		assert.Equal(e.t, want, st.AvailableReplicas, "status.availableReplicas of %s", name)
	}
	assert.Nil(e.t, findCondition(st.Conditions, appsv1.ReplicaSetReplicaFailure), "no failure condition left on %s", name)
}

// podDeletes returns the recorded Pod deletes but the simulated kubelet's: a Pod is deleted
// gracefully (marked first, as on kube-apiserver), and a kubelet that sees the mark confirms
// the termination with a delete of grace period 0. Those are not the controller's.
func (e *testEnv) podDeletes() []clienttesting.Action {
	var out []clienttesting.Action
	for _, a := range e.actions("delete", "pods", "") {
		if g := a.(clienttesting.DeleteActionImpl).DeleteOptions.GracePeriodSeconds; g != nil && *g == 0 {
			continue
		}
		out = append(out, a)
	}
	return out
}

// actions returns the recorded requests with verb on resource (and subresource, "" for none).
func (e *testEnv) actions(verb, resource, subresource string) []clienttesting.Action {
	var out []clienttesting.Action
	for _, a := range e.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource && a.GetSubresource() == subresource {
			out = append(out, a)
		}
	}
	return out
}

func readyPod(name string, lbls map[string]string, owner *appsv1.ReplicaSet) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}, NodeName: "node-a"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{
			Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Minute))}}},
	}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{*ownerRefTo(owner)}
	}
	return p
}

func ownerRefTo(rs *appsv1.ReplicaSet) *metav1.OwnerReference {
	return &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// heldWatches makes the fake's Pod watches hold their events until release is called: an
// informer that has not seen the Pods the controller created, however long that takes.
type heldWatches struct {
	release chan struct{}
	once    sync.Once
}

func holdPodWatches(env *testkit.FakeEnv) *heldWatches {
	h := &heldWatches{release: make(chan struct{})}
	tracker := env.Cluster().Tracker()
	env.Cluster().Clientset().PrependWatchReactor("pods", func(action clienttesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if w, ok := action.(clienttesting.WatchActionImpl); ok {
			opts = w.ListOptions
		}
		inner, err := tracker.Watch(action.GetResource(), action.GetNamespace(), opts)
		if err != nil {
			return true, nil, err
		}
		return true, newHeldWatch(inner, h.release), nil
	})
	return h
}

func (h *heldWatches) Release() { h.once.Do(func() { close(h.release) }) }

// heldWatch buffers inner's events until release is closed, then forwards them in order.
type heldWatch struct {
	inner watch.Interface
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
}

func newHeldWatch(inner watch.Interface, release <-chan struct{}) *heldWatch {
	w := &heldWatch{inner: inner, out: make(chan watch.Event), stop: make(chan struct{})}
	go w.loop(release)
	return w
}

func (w *heldWatch) loop(release <-chan struct{}) {
	defer close(w.out)
	var buf []watch.Event
	in := w.inner.ResultChan()
	for {
		var out chan<- watch.Event
		var next watch.Event
		if release == nil && len(buf) > 0 {
			out, next = w.out, buf[0]
		}
		select {
		case ev, ok := <-in:
			if !ok {
				return
			}
			buf = append(buf, ev)
		case <-release:
			release = nil // nil blocks forever: this case is done
		case out <- next:
			buf = buf[1:]
		case <-w.stop:
			return
		}
	}
}

func (w *heldWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *heldWatch) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.inner.Stop()
	})
}
