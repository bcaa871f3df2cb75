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
	metadatafake "k8s.io/client-go/metadata/fake"
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
