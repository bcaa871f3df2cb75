package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	crcluster "sigs.k8s.io/controller-runtime/pkg/cluster"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	crhandler "sigs.k8s.io/controller-runtime/pkg/handler"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	crsource "sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/multicluster"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// The multi-cluster benchmark: one controller over mcClusters clusters,
// each watched by five informers (ConfigMaps, Secrets, Services and
// ServiceAccounts of one namespace holding mcObjects of each, and
// Namespaces), every event mapped to a key that carries the cluster.
//
// The clusters are one kube-apiserver (testkit.NewAPIServer) reached
// mcClusters times, each through clients of its own (a Proxy function keeps
// client-go from sharing one transport between them, as it would not for
// distinct servers). ctrlkit engages each with a multicluster.Fleet;
// controller-runtime, the peer (multicluster-runtime builds on it), runs
// one cluster.Cluster per cluster and one typed controller whose sources are
// the clusters' caches, as multicluster-runtime does.
//
// Reported per library, over one op (engage every cluster, wait until every
// cache synced, measure, disengage every cluster, wait):
//
//	goroutines/cluster  goroutines added per engaged cluster
//	heap-B/cluster      live heap added per engaged cluster (after a GC)
//	goroutines-left     goroutines still there after every cluster left (the
//	                    controller still running)
//	heap-left-%         live heap still there after every cluster left, in % of
//	                    what they added
//	heap-left-later-%   the same mcLater after they left: x/net's HTTP/2 client
//	                    leaves the health-check timer of a closed connection
//	                    armed (golang/go#80920), so each closed connection and
//	                    its buffers stay reachable until client-go's
//	                    ReadIdleTimeout (30 s) has passed
const (
	mcLater    = 35 * time.Second
	mcClusters = 200
	mcObjects  = 20
	mcNS       = "bench-mc"
)

// mcRequest is the peer's key: controller-runtime's Request plus the cluster.
type mcRequest struct {
	Cluster string
	crreconcile.Request
}

// With CTRLKIT_BENCH_HEAP=<dir>, each op writes heap profiles of what is live before the
// clusters are engaged, while they are (after the figures are taken) and after they left
// (before-<lib>-<op>.pprof, engaged-..., after-...), sampled every 4 KiB:
// `go tool pprof -sample_index=inuse_space -diff_base before-ctrlkit-1.pprof
// after-ctrlkit-1.pprof` shows what the clusters left behind, with engaged-ctrlkit-1.pprof
// what they hold; goroutines-<when>-<lib>-<op>.txt are the goroutines then, grouped by stack.
func BenchmarkMultiCluster(b *testing.B) {
	if os.Getenv("CTRLKIT_BENCH_HEAP") != "" {
		defer func(rate int) { goruntime.MemProfileRate = rate }(goruntime.MemProfileRate)
		goruntime.MemProfileRate = 4096
	}
	env := testkit.NewAPIServer(b)
	ctx := context.Background()
	if _, err := env.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mcNS}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	for i := range mcObjects {
		name := "obj-" + strconv.Itoa(i)
		meta := metav1.ObjectMeta{Namespace: mcNS, Name: name, Labels: map[string]string{"app": "bench"}}
		core := env.Client().CoreV1()
		for _, err := range []error{
			create(core.ConfigMaps(mcNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"k": name}}, metav1.CreateOptions{})),
			create(core.Secrets(mcNS).Create(ctx, &corev1.Secret{ObjectMeta: meta, StringData: map[string]string{"k": name}}, metav1.CreateOptions{})),
			create(core.ServiceAccounts(mcNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta}, metav1.CreateOptions{})),
			create(core.Services(mcNS).Create(ctx, &corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})),
		} {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	base := env.Config()
	base.QPS = -1
	configs := make([]*rest.Config, mcClusters)
	for i := range configs {
		cfg := rest.CopyConfig(base)
		cfg.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
		configs[i] = cfg
	}
	for _, im := range []struct {
		name string
		run  func(b *testing.B, configs []*rest.Config) (engage, disengage, stop func())
	}{{"ctrlkit", mcCtrlkit}, {"controller-runtime", mcControllerRuntime}} {
		b.Run("lib="+im.name, func(b *testing.B) {
			var gPer, hPer, gLeft, hLeft, hLater float64
			n := 0
			for b.Loop() {
				engage, disengage, stop := im.run(b, configs)
				g0, h0 := settle(0)
				heapProfile(b, im.name, n, "before")
				engage()
				g1, h1 := goruntime.NumGoroutine(), liveHeap()
				heapProfile(b, im.name, n, "engaged")
				disengage()
				left := time.Now()
				g2, h2 := settle(g0)
				heapProfile(b, im.name, n, "after")
				time.Sleep(time.Until(left.Add(mcLater))) // a benchmark's settling, not a test's wait
				h3 := liveHeap()
				heapProfile(b, im.name, n, "later")
				stop()
				gPer += float64(g1-g0) / mcClusters
				hPer += float64(h1-h0) / mcClusters
				gLeft += float64(g2 - g0)
				hLeft += 100 * (float64(h2) - float64(h0)) / float64(h1-h0)
				hLater += 100 * (float64(h3) - float64(h0)) / float64(h1-h0)
				n++
			}
			b.ReportMetric(gPer/float64(n), "goroutines/cluster")
			b.ReportMetric(hPer/float64(n), "heap-B/cluster")
			b.ReportMetric(gLeft/float64(n), "goroutines-left")
			b.ReportMetric(hLeft/float64(n), "heap-left-%")
			b.ReportMetric(hLater/float64(n), "heap-left-later-%")
		})
	}
}

func create[T any](_ T, err error) error { return err }

// heapProfile writes the live heap's profile to $CTRLKIT_BENCH_HEAP/<when>-<lib>-<op>.pprof,
// when that is set.
func heapProfile(b *testing.B, lib string, op int, when string) {
	dir := os.Getenv("CTRLKIT_BENCH_HEAP")
	if dir == "" {
		return
	}
	// A heap profile is as of the last completed collection, with frees counted a cycle
	// later: three collections make it show the heap as it is now.
	for range 3 {
		goruntime.GC()
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%s-%d.pprof", when, lib, op)))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
	g, err := os.Create(filepath.Join(dir, fmt.Sprintf("goroutines-%s-%s-%d.txt", when, lib, op)))
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	if err := pprof.Lookup("goroutine").WriteTo(g, 1); err != nil {
		b.Fatal(err)
	}
}

// liveHeap is the live heap after a full collection.
func liveHeap() uint64 {
	goruntime.GC()
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return m.HeapAlloc
}

// settle waits (at most 30 s) until the goroutines are down to want (0:
// until they stop falling), then returns them and the live heap.
func settle(want int) (int, uint64) {
	deadline := time.Now().Add(30 * time.Second)
	last := goruntime.NumGoroutine()
	for time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // a benchmark's settling, not a test's wait
		g := goruntime.NumGoroutine()
		if (want > 0 && g <= want) || (want == 0 && g == last) {
			break
		}
		last = g
	}
	return goruntime.NumGoroutine(), liveHeap()
}

func mcCtrlkit(b *testing.B, configs []*rest.Config) (engage, disengage, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	list := multicluster.NewList(nil)
	fleet, err := multicluster.New(multicluster.Options{Provider: list, Logger: klog.Background()})
	if err != nil {
		b.Fatal(err)
	}
	r := controller.ReconcilerFunc[multicluster.Key](func(context.Context, multicluster.Key) (controller.Result, error) {
		return controller.Result{}, nil
	})
	c, err := multicluster.NewController(fleet, "bench", r, controller.Options[multicluster.Key]{Workers: 8})
	if err != nil {
		b.Fatal(err)
	}
	for _, err := range []error{
		multicluster.Watch(fleet, c, multicluster.For[*corev1.ConfigMap](informer.InNamespaces[*corev1.ConfigMap](mcNS)), controller.EnqueueObject),
		multicluster.Watch(fleet, c, multicluster.For[*corev1.Secret](informer.InNamespaces[*corev1.Secret](mcNS)), controller.EnqueueObject),
		multicluster.Watch(fleet, c, multicluster.For[*corev1.Service](informer.InNamespaces[*corev1.Service](mcNS)), controller.EnqueueObject),
		multicluster.Watch(fleet, c, multicluster.For[*corev1.ServiceAccount](informer.InNamespaces[*corev1.ServiceAccount](mcNS)), controller.EnqueueObject),
		multicluster.Watch(fleet, c, multicluster.For[*corev1.Namespace](), controller.EnqueueObject),
	} {
		if err != nil {
			b.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = fleet.Run(ctx) })
	wg.Go(func() { _ = c.Run(ctx) })
	engage = func() {
		for i, cfg := range configs {
			if err := list.Add("c"+strconv.Itoa(i), multicluster.Connection{Config: cfg}); err != nil {
				b.Fatal(err)
			}
		}
		waitFor(b, "ctrlkit's clusters to sync", func() bool {
			if len(fleet.Clusters()) != len(configs) {
				return false
			}
			for _, name := range fleet.Clusters() {
				cl, err := fleet.Get(name)
				if err != nil || cl.Err() != nil {
					return false
				}
			}
			return true
		})
	}
	disengage = func() {
		for i := range configs {
			list.Remove("c" + strconv.Itoa(i))
		}
		waitFor(b, "ctrlkit's clusters to leave", func() bool { return len(fleet.Clusters()) == 0 })
	}
	stop = func() {
		cancel()
		wg.Wait()
	}
	return engage, disengage, stop
}

func mcControllerRuntime(b *testing.B, configs []*rest.Config) (engage, disengage, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	c, err := crcontroller.NewTypedUnmanaged("bench-mc-"+strconv.FormatInt(crNames.Add(1), 10), crcontroller.TypedOptions[mcRequest]{
		MaxConcurrentReconciles: 8,
		Logger:                  klog.Background(),
		Reconciler: crreconcile.TypedFunc[mcRequest](func(context.Context, mcRequest) (crreconcile.Result, error) {
			return crreconcile.Result{}, nil
		}),
	})
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = c.Start(ctx) })
	var (
		mu      sync.Mutex
		cancels []context.CancelFunc
		sources []crsource.TypedSyncingSource[mcRequest]
	)
	engage = func() {
		for i, cfg := range configs {
			name := "c" + strconv.Itoa(i)
			cl, err := crcluster.New(cfg, func(o *crcluster.Options) {
				o.Scheme = scheme.Scheme
				o.Logger = klog.Background()
				o.Cache.DefaultNamespaces = map[string]crcache.Config{mcNS: {}}
			})
			if err != nil {
				b.Fatal(err)
			}
			cctx, ccancel := context.WithCancel(ctx)
			wg.Go(func() { _ = cl.Start(cctx) })
			toKey := func(_ context.Context, o crclient.Object) []mcRequest {
				return []mcRequest{{Cluster: name, Request: crreconcile.Request{NamespacedName: crclient.ObjectKeyFromObject(o)}}}
			}
			srcs := []crsource.TypedSyncingSource[mcRequest]{
				crsource.TypedKind[crclient.Object](cl.GetCache(), &corev1.ConfigMap{}, crhandler.TypedEnqueueRequestsFromMapFunc(toKey)),
				crsource.TypedKind[crclient.Object](cl.GetCache(), &corev1.Secret{}, crhandler.TypedEnqueueRequestsFromMapFunc(toKey)),
				crsource.TypedKind[crclient.Object](cl.GetCache(), &corev1.Service{}, crhandler.TypedEnqueueRequestsFromMapFunc(toKey)),
				crsource.TypedKind[crclient.Object](cl.GetCache(), &corev1.ServiceAccount{}, crhandler.TypedEnqueueRequestsFromMapFunc(toKey)),
				crsource.TypedKind[crclient.Object](cl.GetCache(), &corev1.Namespace{}, crhandler.TypedEnqueueRequestsFromMapFunc(toKey)),
			}
			for _, s := range srcs {
				if err := c.Watch(s); err != nil {
					b.Fatal(err)
				}
			}
			mu.Lock()
			cancels = append(cancels, ccancel)
			sources = append(sources, srcs...)
			mu.Unlock()
		}
		syncCtx, stop := context.WithTimeout(ctx, 5*time.Minute)
		defer stop()
		for _, s := range sources {
			if err := s.WaitForSync(syncCtx); err != nil {
				b.Fatal(fmt.Errorf("controller-runtime's clusters to sync: %w", err))
			}
		}
	}
	disengage = func() {
		for _, cc := range cancels {
			cc()
		}
	}
	stop = func() {
		cancel()
		wg.Wait()
	}
	return engage, disengage, stop
}

// waitFor polls cond until it holds, for at most five minutes.
func waitFor(b *testing.B, what string, cond func() bool) {
	deadline := time.Now().Add(5 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
