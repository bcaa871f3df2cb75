package informer

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// waitMemory polls f's CacheMemory until ok accepts it, or fails t.
func waitMemory(t *testing.T, f *Factory, ok func(CacheMemory) bool) CacheMemory {
	t.Helper()
	var last CacheMemory
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		last = f.CacheMemory()
		return ok(last), nil
	})
	require.NoError(t, err, "last: %+v", last)
	return last
}

func uidPod(ns, name string) *corev1.Pod {
	p := pod(ns, name, map[string]string{"app": "web", "tier": "frontend"})
	p.UID = types.UID(ns + "-" + name + "-uid")
	p.Spec.Containers = []corev1.Container{{Name: "web", Image: "registry.example.com/web:1.2.3"}}
	return p
}

func TestCacheMemoryFollowsTheCache(t *testing.T) {
	var objs []*corev1.Pod
	for i := range 30 {
		objs = append(objs, uidPod(fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("web-%d", i)))
	}
	objs = append(objs, uidPod("big", "huge"))
	objs[len(objs)-1].Annotations = map[string]string{"blob": string(make([]byte, 64<<10))}
	client := newClient()
	for _, p := range objs {
		_, err := client.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	watching := watchSignal(client, "pods")
	f := NewFactory(client, Options{})
	_, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	startFactory(t, f)

	mem := waitMemory(t, f, func(m CacheMemory) bool { return len(m.Informers) == 1 && m.Informers[0].Objects == 31 })
	pods := mem.Informers[0]
	require.Equal(t, "pods", pods.Resource)
	require.Equal(t, "cluster", pods.Scope)
	require.Greater(t, pods.Bytes, int64(64<<10), "the 64 KiB annotation is counted")
	require.Greater(t, pods.SharedBytes, int64(0), "the Pods' equal labels and containers are shared")
	require.Greater(t, pods.UnsharedBytes, pods.Bytes, "sharing saves something")
	require.Equal(t, "big", pods.Namespaces[0].Namespace, "the largest namespace first")
	require.Len(t, pods.Namespaces, 4)
	require.Equal(t, mem.TableBytes+pods.Bytes, mem.Bytes)

	// A deletion gives back what the object took, and the namespace goes.
	// (The deletion's final state goes through the transform too, and may
	// share its sub-objects with the cached version's: those are given back
	// when the garbage collector frees them.)
	<-watching // the fake clientset drops events sent before a watch exists
	require.NoError(t, client.CoreV1().Pods("big").Delete(context.Background(), "huge", metav1.DeleteOptions{}))
	after := waitMemory(t, f, func(m CacheMemory) bool {
		runtime.GC()
		return m.Informers[0].Objects == 30 && m.Informers[0].Bytes < pods.Bytes-64<<10
	})
	require.Len(t, after.Informers[0].Namespaces, 3)

	// An update replaces the object's record instead of adding one.
	p := objs[0].DeepCopy()
	p.Labels["version"] = "2"
	_, err = client.CoreV1().Pods(p.Namespace).Update(context.Background(), p, metav1.UpdateOptions{})
	require.NoError(t, err)
	// Its labels are its own now (the others' are shared): its own bytes
	// grow. (The shared bytes move with the garbage collector.)
	own := func(m InformerMemory) int64 { return m.Bytes - m.SharedBytes }
	waitMemory(t, f, func(m CacheMemory) bool {
		return m.Informers[0].Objects == 30 && own(m.Informers[0]) > own(after.Informers[0])
	})
}

func TestCacheMemoryWithoutSharingAndWithoutAccounting(t *testing.T) {
	client := newClient(uidPod("a", "web-1"), uidPod("a", "web-2"))
	f := NewFactory(client, Options{DisableSharing: true})
	_, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	startFactory(t, f)
	mem := waitMemory(t, f, func(m CacheMemory) bool { return len(m.Informers) == 1 && m.Informers[0].Objects == 2 })
	require.Zero(t, mem.TableBytes)
	require.Zero(t, mem.Informers[0].SharedBytes)
	require.Equal(t, mem.Informers[0].UnsharedBytes, mem.Informers[0].Bytes, "nothing shared: the same estimate")

	off := NewFactory(newClient(uidPod("a", "web-1")), Options{DisableAccounting: true})
	_, err = For[*corev1.Pod](off)
	require.NoError(t, err)
	startFactory(t, off)
	require.Empty(t, off.CacheMemory().Informers)
	require.Zero(t, off.CacheMemory().Bytes)
}

func TestCacheMemoryDropsAStoppedInformer(t *testing.T) {
	f := NewFactory(newClient(uidPod("a", "web-1")), Options{ReleaseGrace: -1})
	startFactory(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := For[*corev1.Pod](f.HeldUntil(ctx))
	require.NoError(t, err)
	waitMemory(t, f, func(m CacheMemory) bool { return len(m.Informers) == 1 && m.Informers[0].Objects == 1 })
	cancel()
	waitMemory(t, f, func(m CacheMemory) bool { return len(m.Informers) == 0 })

	// A factory shut down holds nothing.
	_, err = For[*corev1.Pod](f)
	require.NoError(t, err)
	waitMemory(t, f, func(m CacheMemory) bool { return len(m.Informers) == 1 && m.Informers[0].Objects == 1 })
	f.Shutdown()
	require.Empty(t, f.CacheMemory().Informers)
}

// Metadata and custom-resource informers are accounted for as typed ones:
// each under its own name, deletions included, and a degradable custom
// resource keeps its metadata only once degraded.
func TestCacheMemoryOfMetadataAndCustomResourceInformers(t *testing.T) {
	ctx := context.Background()
	scheme := metadatafake.NewTestScheme()
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	meta := metadatafake.NewSimpleMetadataClient(scheme, partialSecret("a", "token", true), partialSecret("b", "other", false))
	dyn := newDynamic(unstructuredWidget("a", "small", int64(1)), unstructuredWidget("a", "big", int64(9)))
	f := NewFactory(newClient(), Options{
		MetadataClient:      meta,
		DynamicClient:       dyn,
		BudgetCheckInterval: 5 * time.Millisecond,
		ByObject:            []ObjectOverride{ByObject(ObjectOptions[*widget]{MemoryBudget: 1, BudgetPolicy: BudgetDegrade})},
	})
	_, err := ForMetadata(f, secretsGVR)
	require.NoError(t, err)
	widgets, err := ForResource[*widget](f, widgetsGVR)
	require.NoError(t, err)
	startFactory(t, f)

	byName := func(m CacheMemory) map[string]InformerMemory {
		out := map[string]InformerMemory{}
		for _, inf := range m.Informers {
			out[inf.Resource] = inf
		}
		return out
	}
	waitMemory(t, f, func(m CacheMemory) bool {
		infs := byName(m)
		return infs["secrets (metadata)"].Objects == 2 && infs["widgets.example.com"].Objects == 2 &&
			infs["widgets.example.com"].Bytes > 0 && infs["widgets.example.com"].Degraded
	})

	require.NoError(t, dyn.Resource(widgetsGVR).Namespace("a").Delete(ctx, "big", metav1.DeleteOptions{}))
	require.NoError(t, meta.Resource(secretsGVR).Namespace("b").Delete(ctx, "other", metav1.DeleteOptions{}))
	waitMemory(t, f, func(m CacheMemory) bool {
		infs := byName(m)
		return infs["secrets (metadata)"].Objects == 1 && infs["widgets.example.com"].Objects == 1
	})

	// Degraded: a new widget keeps its metadata only.
	_, err = dyn.Resource(widgetsGVR).Namespace("a").Create(ctx, unstructuredWidget("a", "new", int64(3)), metav1.CreateOptions{})
	require.NoError(t, err)
	var w *widget
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		w, err = widgets.Lister().Get("a", "new")
		return err == nil, nil
	}))
	require.Equal(t, "new", w.Name)
	require.Zero(t, w.Spec.Size, "the spec is dropped")
}

// The sharing table's cleanups hold each shared node's account until the node
// is freed: nothing the account leads to may lead back to the cached objects
// (a meter that held its informer's store did), or a cache whose informers
// stopped is never freed, shut down or not.
func TestCacheMemoryDoesNotKeepAStoppedCacheAlive(t *testing.T) {
	client := newClient()
	for i := range 20 {
		_, err := client.CoreV1().Pods("ns").Create(context.Background(), uidPod("ns", fmt.Sprintf("web-%d", i)), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	var freed atomic.Int32
	func() {
		f := NewFactory(client, Options{})
		pods, err := For[*corev1.Pod](f)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		f.Start(ctx)
		require.True(t, cache.WaitForCacheSync(ctx.Done(), pods.HasSynced))
		require.Equal(t, 20, waitMemory(t, f, func(m CacheMemory) bool { return len(m.Informers) == 1 && m.Informers[0].Objects == 20 }).Informers[0].Objects)
		cached, err := pods.Lister().List(labels.Everything())
		require.NoError(t, err)
		for _, p := range cached {
			runtime.AddCleanup(p, func(n *atomic.Int32) { n.Add(1) }, &freed)
		}
		cancel() // the informers stop; Shutdown is never called
	}()
	require.NoError(t, wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		runtime.GC()
		return freed.Load() == 20, nil
	}), "%d of 20 cached Pods freed", freed.Load())
}

// deleteAndWait deletes pod ns/name through client and waits until the
// factory's accounting shows want objects.
func deleteAndWait(t *testing.T, client kubernetes.Interface, f *Factory, ns, name string, want int) {
	t.Helper()
	require.NoError(t, client.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{}))
	waitMemory(t, f, func(m CacheMemory) bool { return len(m.Informers) == 1 && m.Informers[0].Objects == want })
}

// The accounting learns of deletions from the handlers of this package, with
// no client-go listener of its own, unless the informer starts without one;
// removing the last handler of a running informer keeps its registration,
// muted, for the deletions still queued to it. Each shape forgets every
// deletion.
func TestCacheMemoryForgetsDeletionsThroughTheHandlers(t *testing.T) {
	meterOf := func(t *testing.T, pods Informer[*corev1.Pod]) *meter {
		t.Helper()
		m := pods.(*sharedInformer[*corev1.Pod]).meter
		require.NotNil(t, m)
		return m
	}
	listening := func(m *meter) bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.listening
	}
	setup := func(t *testing.T) (*fake.Clientset, *Factory, Informer[*corev1.Pod], <-chan struct{}) {
		client := newClient(uidPod("a", "p1"), uidPod("a", "p2"), uidPod("a", "p3"), uidPod("a", "p4"))
		watching := watchSignal(client, "pods")
		f := NewFactory(client, Options{})
		pods, err := For[*corev1.Pod](f)
		require.NoError(t, err)
		return client, f, pods, watching
	}

	t.Run("handler added before start", func(t *testing.T) {
		client, f, pods, watching := setup(t)
		var deleted atomic.Int32
		_, err := pods.AddHandler(HandlerFuncs[*corev1.Pod]{OnDelete: func(*corev1.Pod) { deleted.Add(1) }})
		require.NoError(t, err)
		startFactory(t, f)
		require.False(t, listening(meterOf(t, pods)), "the handler's adapter forgets: no listener of the meter's own")
		<-watching
		deleteAndWait(t, client, f, "a", "p1", 3)
		require.Eventually(t, func() bool { return deleted.Load() == 1 }, 10*time.Second, time.Millisecond)
	})

	t.Run("no handler", func(t *testing.T) {
		client, f, pods, watching := setup(t)
		startFactory(t, f)
		require.True(t, listening(meterOf(t, pods)))
		<-watching
		deleteAndWait(t, client, f, "a", "p1", 3)
	})

	t.Run("handler added after start", func(t *testing.T) {
		client, f, pods, watching := setup(t)
		startFactory(t, f)
		_, err := pods.AddHandler(HandlerFuncs[*corev1.Pod]{})
		require.NoError(t, err)
		<-watching
		deleteAndWait(t, client, f, "a", "p1", 3)
		deleteAndWait(t, client, f, "a", "p2", 2)
	})

	t.Run("handlers removed after start", func(t *testing.T) {
		client, f, pods, watching := setup(t)
		var first, second atomic.Int32
		reg1, err := pods.AddHandler(HandlerFuncs[*corev1.Pod]{OnDelete: func(*corev1.Pod) { first.Add(1) }})
		require.NoError(t, err)
		reg2, err := pods.AddHandler(HandlerFuncs[*corev1.Pod]{OnDelete: func(*corev1.Pod) { second.Add(1) }})
		require.NoError(t, err)
		startFactory(t, f)
		m := meterOf(t, pods)
		<-watching

		require.NoError(t, pods.RemoveHandler(reg1))
		require.False(t, listening(m), "another handler still forgets")
		deleteAndWait(t, client, f, "a", "p1", 3)
		require.Eventually(t, func() bool { return second.Load() == 1 }, 10*time.Second, time.Millisecond)

		require.NoError(t, pods.RemoveHandler(reg2))
		require.True(t, listening(m), "the last handler's registration stays, muted")
		require.NoError(t, pods.RemoveHandler(reg2), "removing it again changes nothing")
		deleteAndWait(t, client, f, "a", "p2", 2)
		deleteAndWait(t, client, f, "a", "p3", 1)
		require.Equal(t, int32(0), first.Load(), "a removed handler is not called")
		require.Equal(t, int32(1), second.Load(), "a muted handler is not called")
	})

	t.Run("metadata and custom resource views", func(t *testing.T) {
		ctx := context.Background()
		scheme := metadatafake.NewTestScheme()
		require.NoError(t, metav1.AddMetaToScheme(scheme))
		meta := metadatafake.NewSimpleMetadataClient(scheme, partialSecret("a", "token", true), partialSecret("b", "other", false))
		dyn := newDynamic(unstructuredWidget("a", "small", int64(1)), unstructuredWidget("a", "big", int64(9)))
		f := NewFactory(newClient(), Options{MetadataClient: meta, DynamicClient: dyn})
		secrets, err := ForMetadata(f, secretsGVR)
		require.NoError(t, err)
		widgets, err := ForResource[*widget](f, widgetsGVR)
		require.NoError(t, err)
		_, err = secrets.AddHandler(HandlerFuncs[*metav1.PartialObjectMetadata]{})
		require.NoError(t, err)
		_, err = widgets.AddHandler(HandlerFuncs[*widget]{})
		require.NoError(t, err)
		startFactory(t, f)
		for _, m := range []*meter{secrets.(*sharedInformer[*metav1.PartialObjectMetadata]).meter, widgets.(*sharedInformer[*widget]).meter} {
			require.NotNil(t, m)
			require.False(t, listening(m), "%s: the handler's adapter forgets", m.resource)
		}
		objects := func(m CacheMemory) map[string]int {
			out := map[string]int{}
			for _, inf := range m.Informers {
				out[inf.Resource] = inf.Objects
			}
			return out
		}
		waitMemory(t, f, func(m CacheMemory) bool {
			o := objects(m)
			return o["secrets (metadata)"] == 2 && o["widgets.example.com"] == 2
		})
		// The fake clients drop events sent before a watch exists: delete once both watch.
		watches := func(actions []k8stesting.Action, resource string) bool {
			for _, a := range actions {
				if a.GetVerb() == "watch" && a.GetResource().Resource == resource {
					return true
				}
			}
			return false
		}
		require.Eventually(t, func() bool {
			return watches(dyn.Actions(), widgetsGVR.Resource) && watches(meta.Actions(), secretsGVR.Resource)
		}, 10*time.Second, time.Millisecond)
		require.NoError(t, dyn.Resource(widgetsGVR).Namespace("a").Delete(ctx, "big", metav1.DeleteOptions{}))
		require.NoError(t, meta.Resource(secretsGVR).Namespace("b").Delete(ctx, "other", metav1.DeleteOptions{}))
		waitMemory(t, f, func(m CacheMemory) bool {
			o := objects(m)
			return o["secrets (metadata)"] == 1 && o["widgets.example.com"] == 1
		})
	})

	t.Run("namespace leaves the set", func(t *testing.T) {
		_, f := scopedCluster(t, uidPod("a", "p1"), uidPod("a", "p2"), uidPod("b", "p3"))
		set := newSet(t, "a", "b")
		pods, err := For(f, InNamespaceSet[*corev1.Pod](set))
		require.NoError(t, err)
		left := make(chan string, 4)
		_, err = pods.AddHandler(HandlerFuncs[*corev1.Pod]{OnOutOfScope: func(p *corev1.Pod) { left <- p.Name }})
		require.NoError(t, err)
		startFactory(t, f)
		require.False(t, listening(meterOf(t, pods)))
		waitMemory(t, f, func(m CacheMemory) bool { return len(m.Informers) == 1 && m.Informers[0].Objects == 3 })
		set.Remove("a")
		waitMemory(t, f, func(m CacheMemory) bool { return m.Informers[0].Objects == 1 })
		require.ElementsMatch(t, []string{"p1", "p2"}, []string{<-left, <-left})
	})
}
