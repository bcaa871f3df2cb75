package controller_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// gatedWatch forwards inner's events only while its gate is open, buffering them meanwhile.
type gatedWatch struct {
	inner watch.Interface
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
}

func newGatedWatch(inner watch.Interface, open <-chan struct{}) *gatedWatch {
	w := &gatedWatch{inner: inner, out: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(w.out)
		defer inner.Stop()
		var buf []watch.Event
		in := inner.ResultChan()
		for {
			var out chan<- watch.Event
			var next watch.Event
			if open == nil && len(buf) > 0 {
				out, next = w.out, buf[0]
			}
			select {
			case ev, ok := <-in:
				if !ok {
					return
				}
				buf = append(buf, ev)
			case <-open:
				open = nil
			case out <- next:
				buf = buf[1:]
			case <-w.stop:
				return
			}
		}
	}()
	return w
}

func (w *gatedWatch) ResultChan() <-chan watch.Event { return w.out }
func (w *gatedWatch) Stop()                          { w.once.Do(func() { close(w.stop) }) }

// gateWatches holds back the events of every watch of resource in cluster (typed, dynamic
// and metadata front ends alike) until the returned function is called.
func gateWatches(cluster *fakecluster.Cluster, resource string) (open func()) {
	gate := make(chan struct{})
	tracker := cluster.Tracker()
	cluster.Clientset().PrependWatchReactor(resource, func(action clienttesting.Action) (bool, watch.Interface, error) {
		inner, err := tracker.Watch(action.GetResource(), action.GetNamespace(), action.(clienttesting.WatchActionImpl).ListOptions)
		if err != nil {
			return true, nil, err
		}
		return true, newGatedWatch(inner, gate), nil
	})
	return func() { close(gate) }
}

// With Fences.Auto, the writes a Reconcile makes through a ctrlkit client fence its key by
// themselves. The Reconcile below increments a counter in the cached ConfigMap and writes it
// back with its resourceVersion, then asks to run again: without fences the next run reads the
// cache before the write arrives and its write conflicts; with them, never.
func TestAutoFenceMakesOwnWritesVisible(t *testing.T) {
	for _, fenced := range []bool{true, false} {
		t.Run("fenced="+strconv.FormatBool(fenced), func(t *testing.T) {
			cluster, err := fakecluster.New(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}})
			require.NoError(t, err)
			open := gateWatches(cluster, "configmaps")
			f := informer.NewFactory(cluster.Clientset(), informer.Options{})
			cms, err := informer.For[*corev1.ConfigMap](f)
			require.NoError(t, err)
			cmClient, err := client.For[*corev1.ConfigMap](cluster.Clientset())
			require.NoError(t, err)

			const target = 10
			var conflicts, runs atomic.Int32
			opts := controller.Options[controller.Key]{}
			if fenced {
				opts.Fences = &controller.Fences{Auto: true, TTL: time.Hour}
			}
			c, err := controller.New("counter", controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
				runs.Add(1)
				cm, err := cms.Lister().Get(key.Namespace, key.Name)
				if err != nil {
					return controller.Result{}, err
				}
				n, _ := strconv.Atoi(cm.Data["count"])
				if n >= target {
					return controller.Result{}, nil
				}
				cm = cm.DeepCopy()
				cm.Data = map[string]string{"count": strconv.Itoa(n + 1)}
				if _, err := cmClient.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
					if apierrors.IsConflict(err) {
						conflicts.Add(1)
					}
					return controller.Result{}, err
				}
				return controller.Result{Requeue: true}, nil
			}), opts)
			require.NoError(t, err)
			require.NoError(t, controller.Watch(c, cms, controller.EnqueueObject))
			runWithInformers(t, f, c)
			ctx := context.Background()

			// The initial list needs no watch; hold the watch until the first write is made.
			require.Eventually(t, func() bool { return runs.Load() >= 1 }, 10*time.Second, time.Millisecond)
			if fenced {
				require.Eventually(t, func() bool { return c.Stats().Fenced == 1 }, 10*time.Second, time.Millisecond)
				assert.Equal(t, int32(1), runs.Load(), "held, not run, until the informer shows the write")
			} else {
				require.Eventually(t, func() bool { return conflicts.Load() > 0 }, 10*time.Second, time.Millisecond,
					"the stale cache makes the second write conflict")
			}
			open()
			require.Eventually(t, func() bool {
				cm, err := cluster.Clientset().CoreV1().ConfigMaps("ns").Get(ctx, "cm", metav1.GetOptions{})
				return err == nil && cm.Data["count"] == strconv.Itoa(target) && c.Stats().Idle()
			}, 10*time.Second, time.Millisecond)
			if fenced {
				assert.Zero(t, conflicts.Load(), "no write conflicted with the controller's own previous write")
			}
		})
	}
}

// fencedView is one way a controller holds the ConfigMaps it writes: the view's informer of
// ConfigMaps, and an informer of Secrets of the same view declared after it (a second resource
// with the same Go type when the view is unstructured or metadata-only).
type fencedView struct {
	name  string
	build func(t *testing.T, f *informer.Factory, c *controller.Controller[controller.Key]) func(namespace, name string) (metav1.Object, error)
}

func fencedViews() []fencedView {
	cms, secrets := corev1.SchemeGroupVersion.WithResource("configmaps"), corev1.SchemeGroupVersion.WithResource("secrets")
	return []fencedView{
		{"typed", func(t *testing.T, f *informer.Factory, c *controller.Controller[controller.Key]) func(string, string) (metav1.Object, error) {
			inf, err := informer.For[*corev1.ConfigMap](f)
			require.NoError(t, err)
			decoy, err := informer.For[*corev1.Secret](f)
			require.NoError(t, err)
			require.NoError(t, controller.Watch(c, inf, controller.EnqueueObject))
			require.NoError(t, controller.Watch(c, decoy, controller.EnqueueObject))
			return func(ns, name string) (metav1.Object, error) { return inf.Lister().Get(ns, name) }
		}},
		{"unstructured", func(t *testing.T, f *informer.Factory, c *controller.Controller[controller.Key]) func(string, string) (metav1.Object, error) {
			inf, err := informer.ForResource[*unstructured.Unstructured](f, cms)
			require.NoError(t, err)
			decoy, err := informer.ForResource[*unstructured.Unstructured](f, secrets)
			require.NoError(t, err)
			require.NoError(t, controller.Watch(c, inf, controller.EnqueueObject))
			require.NoError(t, controller.Watch(c, decoy, controller.EnqueueObject))
			return func(ns, name string) (metav1.Object, error) { return inf.Lister().Get(ns, name) }
		}},
		{"metadata", func(t *testing.T, f *informer.Factory, c *controller.Controller[controller.Key]) func(string, string) (metav1.Object, error) {
			inf, err := informer.ForMetadata(f, cms)
			require.NoError(t, err)
			decoy, err := informer.ForMetadata(f, secrets)
			require.NoError(t, err)
			require.NoError(t, controller.Watch(c, inf, controller.EnqueueObject))
			require.NoError(t, controller.Watch(c, decoy, controller.EnqueueObject))
			return func(ns, name string) (metav1.Object, error) { return inf.Lister().Get(ns, name) }
		}},
	}
}

// fencedWriter writes ConfigMaps through one kind of ctrlkit client: update sets the count
// annotation at resourceVersion rv, remove deletes.
type fencedWriter struct {
	name  string
	build func(t *testing.T, cluster *fakecluster.Cluster) fencedWrites
}

type fencedWrites struct {
	update func(ctx context.Context, namespace, name, rv string, count int) error
	remove func(ctx context.Context, namespace, name string) error
}

func fencedWriters() []fencedWriter {
	return []fencedWriter{
		{"typed", func(t *testing.T, cluster *fakecluster.Cluster) fencedWrites {
			cms, err := client.For[*corev1.ConfigMap](cluster.Clientset())
			require.NoError(t, err)
			return fencedWrites{
				update: func(ctx context.Context, ns, name, rv string, n int) error {
					_, err := cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
						ResourceVersion: rv, Annotations: map[string]string{"count": strconv.Itoa(n)}}}, metav1.UpdateOptions{})
					return err
				},
				remove: func(ctx context.Context, ns, name string) error {
					return cms.Delete(ctx, ns, name, metav1.DeleteOptions{})
				},
			}
		}},
		{"unstructured", func(t *testing.T, cluster *fakecluster.Cluster) fencedWrites {
			cms, err := customresource.NewClient[*unstructured.Unstructured](cluster.Dynamic(),
				corev1.SchemeGroupVersion.WithResource("configmaps"), customresource.WithKind("ConfigMap"))
			require.NoError(t, err)
			return fencedWrites{
				update: func(ctx context.Context, ns, name, rv string, n int) error {
					u := &unstructured.Unstructured{}
					u.SetAPIVersion("v1")
					u.SetKind("ConfigMap")
					u.SetNamespace(ns)
					u.SetName(name)
					u.SetResourceVersion(rv)
					u.SetAnnotations(map[string]string{"count": strconv.Itoa(n)})
					_, err := cms.Update(ctx, u, metav1.UpdateOptions{})
					return err
				},
				remove: func(ctx context.Context, ns, name string) error {
					return cms.Delete(ctx, ns, name, metav1.DeleteOptions{})
				},
			}
		}},
	}
}

// Fences.Auto matches a write to the informer of the written resource, whatever the client
// wrote it (typed, or unstructured as a customresource client writes) and whatever view the
// controller holds it in: a ConfigMap's write is fenced on a typed, unstructured or
// metadata-only informer of ConfigMaps, and never on an informer of another resource with the
// same Go type (which would hold the key until the TTL, here an hour). The count lives in an
// annotation so that every view reads it.
func TestAutoFenceMatchesTheWrittenResourceInEveryView(t *testing.T) {
	for _, writer := range fencedWriters() {
		for _, view := range fencedViews() {
			t.Run("client="+writer.name+"/informer="+view.name, func(t *testing.T) {
				testAutoFenceShape(t, writer, view)
			})
		}
	}
}

// shapeCluster is the shape tests' cluster: ConfigMap ns/cm, its watches held back until open
// is called, and a factory serving every view (typed, unstructured, metadata-only).
func shapeCluster(t *testing.T) (cluster *fakecluster.Cluster, f *informer.Factory, open func()) {
	t.Helper()
	cluster, err := fakecluster.New(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}})
	require.NoError(t, err)
	open = gateWatches(cluster, "configmaps")
	f = informer.NewFactory(cluster.Clientset(), informer.Options{DynamicClient: cluster.Dynamic(), MetadataClient: cluster.Metadata()})
	return cluster, f, open
}

func testAutoFenceShape(t *testing.T, writer fencedWriter, view fencedView) {
	cluster, f, open := shapeCluster(t)
	write := writer.build(t, cluster).update

	const target = 5
	var conflicts, runs atomic.Int32
	var get func(namespace, name string) (metav1.Object, error)
	c, err := controller.New("counter", controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
		if key.Name != "cm" {
			return controller.Result{}, nil
		}
		runs.Add(1)
		cached, err := get(key.Namespace, key.Name)
		if err != nil {
			return controller.Result{}, err
		}
		n, _ := strconv.Atoi(cached.GetAnnotations()["count"])
		if n >= target {
			return controller.Result{}, nil
		}
		if err := write(ctx, key.Namespace, key.Name, cached.GetResourceVersion(), n+1); err != nil {
			if apierrors.IsConflict(err) {
				conflicts.Add(1)
			}
			return controller.Result{}, err
		}
		return controller.Result{Requeue: true}, nil
	}), controller.Options[controller.Key]{Fences: &controller.Fences{Auto: true, TTL: time.Hour}})
	require.NoError(t, err)
	get = view.build(t, f, c)
	runWithInformers(t, f, c)
	ctx := context.Background()

	require.Eventually(t, func() bool { return runs.Load() >= 1 && c.Stats().Fenced == 1 }, 10*time.Second, time.Millisecond,
		"the write is fenced on the ConfigMaps' informer")
	assert.Equal(t, int32(1), runs.Load(), "held, not run, until the informer shows the write")
	open()
	require.Eventually(t, func() bool {
		cm, err := cluster.Clientset().CoreV1().ConfigMaps("ns").Get(ctx, "cm", metav1.GetOptions{})
		return err == nil && cm.Annotations["count"] == strconv.Itoa(target) && c.Stats().Idle()
	}, 10*time.Second, time.Millisecond, "released by the ConfigMaps' informer, not by the TTL")
	assert.Zero(t, conflicts.Load(), "no write conflicted with the controller's own previous write")
}

// A delete through either client holds the key, in every view, until the informer of the
// deleted resource no longer has the object: the next Reconcile never reads it back.
func TestAutoFenceMatchesTheDeletedResourceInEveryView(t *testing.T) {
	for _, writer := range fencedWriters() {
		for _, view := range fencedViews() {
			t.Run("client="+writer.name+"/informer="+view.name, func(t *testing.T) {
				cluster, f, open := shapeCluster(t)
				remove := writer.build(t, cluster).remove

				var runs, deleted, sawDeleted atomic.Int32
				var get func(namespace, name string) (metav1.Object, error)
				c, err := controller.New("deleter", controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
					if key.Name != "cm" {
						return controller.Result{}, nil
					}
					runs.Add(1)
					_, err := get(key.Namespace, key.Name)
					switch {
					case apierrors.IsNotFound(err):
						return controller.Result{}, nil
					case err != nil:
						return controller.Result{}, err
					case deleted.Load() > 0:
						sawDeleted.Add(1)
						return controller.Result{}, nil
					}
					if err := remove(ctx, key.Namespace, key.Name); err != nil {
						return controller.Result{}, err
					}
					deleted.Add(1)
					return controller.Result{Requeue: true}, nil
				}), controller.Options[controller.Key]{Fences: &controller.Fences{Auto: true, TTL: time.Hour}})
				require.NoError(t, err)
				get = view.build(t, f, c)
				runWithInformers(t, f, c)

				require.Eventually(t, func() bool { return deleted.Load() == 1 && c.Stats().Fenced == 1 }, 10*time.Second, time.Millisecond,
					"the delete is fenced on the ConfigMaps' informer")
				assert.Equal(t, int32(1), runs.Load(), "held, not run, until the informer shows the delete")
				open()
				require.Eventually(t, func() bool { return runs.Load() >= 2 && c.Stats().Idle() }, 10*time.Second, time.Millisecond,
					"released by the ConfigMaps' informer, not by the TTL")
				assert.Zero(t, sawDeleted.Load(), "no Reconcile read the deleted ConfigMap back from the cache")
			})
		}
	}
}
