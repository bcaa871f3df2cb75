package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	crhandler "sigs.k8s.io/controller-runtime/pkg/handler"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	crsource "sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
)

// The controller benchmark: end to end, from informers starting (or objects
// being created) until every one of 10^4 ConfigMaps in a fake clientset has
// been reconciled once, with 8 workers. Both implementations do the same
// work on the same client-go machinery: a shared informer from a factory on
// the fake clientset, an event handler enqueueing namespace/name, a queue,
// 8 workers, and a Reconcile that reads the object from the informer's
// lister. Both log through klog's logger and record Prometheus metrics (a
// private registry for ctrlkit, controller-runtime's own).
//
// workload=startup-10000: the objects are created in the fake clientset
// before the controller starts, as when a controller restarts on a full
// cluster; the timer runs from starting the informers to the last reconcile.
// The fake clientset's cost (deep copies and sorting on list) is in every
// column. It is fake.NewSimpleClientset: NewClientset's server-side-apply
// field tracking would only add the same cost to each.
//
// There is no "create while running" workload: the fake's watchers buffer
// 100 events and panic ("channel full") when a writer outpaces the informer,
// and NewClientset's field tracking costs milliseconds per create, so such a
// workload measures the fake, not the controllers.

const controllerObjects = 10_000

// tally counts first reconciles of each object and closes done when all were
// seen.
type tally struct {
	seen  []atomic.Bool
	n     atomic.Int64
	index map[string]int
	done  chan struct{}
}

func newTally(names []string) *tally {
	t := &tally{seen: make([]atomic.Bool, len(names)), index: make(map[string]int, len(names)), done: make(chan struct{})}
	for i, n := range names {
		t.index[n] = i
	}
	return t
}

// reconciled is the shared Reconcile body: read the object, touch its data.
func (t *tally) reconciled(cm *corev1.ConfigMap, err error) error {
	if err != nil {
		return err
	}
	if len(cm.Data) == 0 {
		return fmt.Errorf("%s has no data", cm.Name)
	}
	i, ok := t.index[cm.Name]
	if ok && t.seen[i].CompareAndSwap(false, true) && t.n.Add(1) == int64(len(t.seen)) {
		close(t.done)
	}
	return nil
}

func (t *tally) wait(b *testing.B) {
	select {
	case <-t.done:
	case <-time.After(2 * time.Minute):
		b.Fatalf("only %d of %d objects reconciled within 2 minutes", t.n.Load(), len(t.seen))
	}
}

func benchConfigMaps(n int) ([]string, []runtime.Object) {
	names := make([]string, n)
	objs := make([]runtime.Object, n)
	for i := range n {
		names[i] = "cm-" + strconv.Itoa(i)
		objs[i] = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: names[i], ResourceVersion: "1",
				Labels: map[string]string{"app": "bench"}},
			Data: map[string]string{"key": "value-" + strconv.Itoa(i)},
		}
	}
	return names, objs
}

// controllerImpl starts one implementation's controller on client and
// returns once it runs; stop shuts it down and waits.
type controllerImpl struct {
	name  string
	start func(b *testing.B, client kubernetes.Interface, t *tally) (stop func())
}

var controllerImpls = []controllerImpl{
	{"ctrlkit", func(b *testing.B, c kubernetes.Interface, t *tally) func() { return startCtrlkit(b, c, t, nil) }},
	// Write fences on (Fences.Auto), for reconciles that write nothing: the cost of the
	// fence step every key passes, which decides whether Auto could be the default.
	{"ctrlkit-fences", func(b *testing.B, c kubernetes.Interface, t *tally) func() {
		return startCtrlkit(b, c, t, &controller.Fences{Auto: true})
	}},
	{"controller-runtime", func(b *testing.B, c kubernetes.Interface, t *tally) func() {
		return startControllerRuntime(b, c, t, true)
	}},
	{"controller-runtime-nosync", func(b *testing.B, c kubernetes.Interface, t *tally) func() {
		return startControllerRuntime(b, c, t, false)
	}},
}

// syncingInformer is controller-runtime's source.Informer made a
// SyncingSource, waiting for the cache exactly as source.Kind (the source
// every controller-runtime builder uses) does: client-go's
// cache.WaitForCacheSync. Without it the controller starts its workers before
// the cache has synced, which ctrlkit (like kube-controller-manager) never
// does; that variant is impl=controller-runtime-nosync.
type syncingInformer struct {
	crsource.Informer
}

func (s *syncingInformer) WaitForSync(ctx context.Context) error {
	if !toolscache.WaitForCacheSync(ctx.Done(), s.Informer.Informer.HasSynced) {
		return errors.New("configmaps cache did not sync")
	}
	return nil
}

func startCtrlkit(b *testing.B, client kubernetes.Interface, t *tally, fences *controller.Fences) func() {
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	f := informer.NewFactory(client, informer.Options{Namespace: "bench"})
	cms, err := informer.For[*corev1.ConfigMap](f)
	if err != nil {
		b.Fatal(err)
	}
	lister := cms.Lister()
	metrics, err := controller.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	c, err := controller.New("bench", controller.ReconcilerFunc[controller.Key](
		func(ctx context.Context, k controller.Key) (controller.Result, error) {
			return controller.Result{}, t.reconciled(lister.Get(k.Namespace, k.Name))
		}), controller.Options[controller.Key]{Workers: 8, Metrics: metrics, Fences: fences})
	if err != nil {
		b.Fatal(err)
	}
	if err := controller.Watch(c, cms, controller.EnqueueObject); err != nil {
		b.Fatal(err)
	}
	f.Start(ctx)
	return runUntilStopped(b, cancel, func() error { return c.Run(ctx) }, f.Shutdown)
}

// runUntilStopped runs run (a controller's Run or Start) in a goroutine and returns how to
// stop it: cancel its context, wait for it (an error fails the benchmark), then each of after.
func runUntilStopped(b *testing.B, cancel context.CancelFunc, run func() error, after ...func()) (stop func()) {
	stopped := make(chan error, 1)
	go func() { stopped <- run() }()
	return func() {
		cancel()
		if err := <-stopped; err != nil {
			b.Error(err)
		}
		for _, f := range after {
			f()
		}
	}
}

var crNames atomic.Int64

func startControllerRuntime(b *testing.B, client kubernetes.Interface, t *tally, waitForSync bool) func() {
	ctx, cancel := context.WithCancel(context.Background())
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace("bench"))
	inf := f.Core().V1().ConfigMaps()
	lister := inf.Lister()
	c, err := crcontroller.NewTypedUnmanaged("bench-"+strconv.FormatInt(crNames.Add(1), 10), crcontroller.TypedOptions[crreconcile.Request]{
		MaxConcurrentReconciles: 8,
		Logger:                  klog.Background(),
		Reconciler: crreconcile.Func(func(ctx context.Context, req crreconcile.Request) (crreconcile.Result, error) {
			return crreconcile.Result{}, t.reconciled(lister.ConfigMaps(req.Namespace).Get(req.Name))
		}),
	})
	if err != nil {
		b.Fatal(err)
	}
	src := crsource.Informer{Informer: inf.Informer(), Handler: &crhandler.EnqueueRequestForObject{}}
	if waitForSync {
		err = c.Watch(&syncingInformer{src})
	} else {
		err = c.Watch(&src)
	}
	if err != nil {
		b.Fatal(err)
	}
	f.Start(ctx.Done())
	return runUntilStopped(b, cancel, func() error { return c.Start(ctx) }, f.Shutdown)
}

func BenchmarkController(b *testing.B) {
	names, objs := benchConfigMaps(controllerObjects)
	seeded := fake.NewSimpleClientset(objs...) //nolint:staticcheck // see the note on the fake above
	for _, im := range controllerImpls {
		b.Run("workload=startup-10000/impl="+im.name, func(b *testing.B) {
			for b.Loop() {
				t := newTally(names)
				stop := im.start(b, seeded, t)
				t.wait(b)
				b.StopTimer()
				stop()
				b.StartTimer()
			}
		})
	}
}
