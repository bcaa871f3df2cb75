package controller

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	kworkqueue "k8s.io/client-go/util/workqueue"

	"github.com/ctrlkit/ctrlkit/informer"
)

// mirror copies every ConfigMap of namespace "src" into namespace "dst" and
// deletes copies whose source is gone. It reads sources from the cache and
// copies uncached, as a controller owning its outputs would after a
// conflict.
type mirror struct {
	client kubernetes.Interface
	src    informer.Lister[*corev1.ConfigMap]
}

func (m *mirror) Reconcile(ctx context.Context, k Key) (Result, error) {
	src, err := m.src.Get(k.Namespace, k.Name)
	if apierrors.IsNotFound(err) {
		err := m.client.CoreV1().ConfigMaps("dst").Delete(ctx, k.Name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return Result{}, nil
		}
		return Result{}, err
	}
	if err != nil {
		return Result{}, err
	}
	dst, err := m.client.CoreV1().ConfigMaps("dst").Get(ctx, k.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = m.client.CoreV1().ConfigMaps("dst").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "dst", Name: k.Name},
			Data:       src.Data,
		}, metav1.CreateOptions{})
		return Result{}, err
	case err != nil:
		return Result{}, err
	case fmt.Sprint(dst.Data) == fmt.Sprint(src.Data):
		return Result{}, nil
	}
	dst = dst.DeepCopy()
	dst.Data = src.Data
	_, err = m.client.CoreV1().ConfigMaps("dst").Update(ctx, dst, metav1.UpdateOptions{})
	return Result{}, err
}

// A fake clientset fails 20% of the controller's writes; 500 objects are
// created, 100 changed and 50 deleted while it runs; the controller converges
// every one of them and drops none.
func TestChaosConvergesWithFailingWrites(t *testing.T) {
	const (
		objects = 500
		changed = 100
		deleted = 50
	)
	var objs []runtime.Object
	for i := range objects {
		cm := configMap("src", fmt.Sprintf("cm-%03d", i))
		cm.Data = map[string]string{"v": fmt.Sprintf("%d-0", i)}
		objs = append(objs, cm)
	}
	client := fake.NewClientset(objs...)
	var (
		rndMu    sync.Mutex
		rnd      = rand.New(rand.NewPCG(2026, 5))
		injected atomic.Int64
		writes   atomic.Int64
	)
	client.PrependReactor("*", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() != "dst" {
			return false, nil, nil // the test's own writes never fail
		}
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
		default:
			return false, nil, nil
		}
		writes.Add(1)
		rndMu.Lock()
		fail := rnd.Float64() < 0.2
		rndMu.Unlock()
		if fail {
			injected.Add(1)
			return true, nil, apierrors.NewServiceUnavailable("injected failure")
		}
		return false, nil, nil
	})

	factory := informer.NewFactory(client, informer.Options{Namespace: "src"})
	srcInf, err := informer.For[*corev1.ConfigMap](factory)
	require.NoError(t, err)
	c, err := New("mirror", Reconciler[Key](&mirror{client: client, src: srcInf.Lister()}), Options[Key]{
		Workers: 8,
		// Per-item backoff only: the default's overall 10 qps bucket protects
		// a real API server and would only slow this test down.
		RateLimiter: kworkqueue.NewTypedItemExponentialFailureRateLimiter[Key](time.Millisecond, 100*time.Millisecond),
	})
	require.NoError(t, err)
	require.NoError(t, Watch(c, srcInf, EnqueueObject))

	ctx, logs := testLogger(t)
	factory.Start(ctx)
	t.Cleanup(factory.Shutdown)
	stopController := startController(t, ctx, c)

	want := map[string]string{}
	for i := range objects {
		want[fmt.Sprintf("cm-%03d", i)] = fmt.Sprintf("%d-0", i)
	}
	// Changes and deletions race with the initial convergence.
	for i := range changed {
		name := fmt.Sprintf("cm-%03d", i)
		cm := configMap("src", name)
		cm.ResourceVersion = "2" // the fake keeps resourceVersions as given; a new one makes this an update, not a resync
		cm.Data = map[string]string{"v": fmt.Sprintf("%d-1", i)}
		_, err := client.CoreV1().ConfigMaps("src").Update(ctx, cm, metav1.UpdateOptions{})
		require.NoError(t, err)
		want[name] = cm.Data["v"]
	}
	for i := objects - deleted; i < objects; i++ {
		name := fmt.Sprintf("cm-%03d", i)
		require.NoError(t, client.CoreV1().ConfigMaps("src").Delete(ctx, name, metav1.DeleteOptions{}))
		delete(want, name)
	}

	converged := func() (bool, string) {
		list, err := client.CoreV1().ConfigMaps("dst").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		got := map[string]string{}
		for _, cm := range list.Items {
			got[cm.Name] = cm.Data["v"]
		}
		if len(got) != len(want) {
			return false, fmt.Sprintf("%d copies, want %d", len(got), len(want))
		}
		for k, v := range want {
			if got[k] != v {
				return false, fmt.Sprintf("%s = %q, want %q", k, got[k], v)
			}
		}
		return true, ""
	}
	var last string
	require.Eventually(t, func() bool {
		ok, why := converged()
		last = why
		return ok
	}, 30*time.Second, 50*time.Millisecond, "not converged: %s", last)
	waitIdle(t, c)
	stopController()

	t.Logf("writes %d, injected failures %d", writes.Load(), injected.Load())
	assert.Greater(t, injected.Load(), int64(objects/10), "the chaos did not happen")
	for _, e := range logged(logs) {
		assert.False(t, strings.Contains(e.Message, "dropping the key"), "a key was dropped: %v", e)
		var pe *PanicError
		assert.False(t, errors.As(e.Err, &pe))
	}
}

func configMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1"}}
}
