package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	crcluster "sigs.k8s.io/controller-runtime/pkg/cluster"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	crhandler "sigs.k8s.io/controller-runtime/pkg/handler"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	crsource "sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// The read-your-own-writes benchmark (issue 50): a list-heavy controller on a real
// kube-apiserver, written once per library with the same steps, and each library's answer
// to "do not act on a cache that has not seen my own writes yet".
//
// The controller is a ReplicaSet controller stripped to its reads and writes (no
// expectations, no adoption, no slow start): get the ReplicaSet from the cache, list its
// Pods from the cache by selector, create the missing ones (generateName) or delete the
// extra ones, and write status.replicas (the Pods it counted) with an Update of the cached
// ReplicaSet when it differs. A cache that lags behind the controller's own writes shows up
// as Pods created twice (and later deleted again) and as Conflicts on the status Update.
//
//	impl=ctrlkit                  write fences (controller.Fences{Auto: true}): a key whose
//	                              Reconcile wrote is held until the cache shows those writes;
//	                              other keys go on
//	impl=controller-runtime-ryow  controller-runtime v0.25.3's read-your-own-writes client
//	                              (client.CacheOptions.EnableReadYourWritesConsistency): a
//	                              Get waits for the writes to its object, a List for every
//	                              write of its type this client made
//	impl=controller-runtime       neither: the reference for what the guard prevents
//
// One op: in a fresh namespace, start the controller, create ryowSets ReplicaSets of 5,
// wait until converged, scale all to 1, wait, scale all to 8, wait; then stop the controller
// and delete the objects (untimed). Converged means every ReplicaSet's status.replicas is its
// spec.replicas and the API server holds exactly that many of its Pods. Both sides run 5
// workers (kube-controller-manager's default) and then 20, and send requests unthrottled (QPS -1).
//
// Reported per op besides the time: reconciles, creates and deletes sent (the work the
// scaling needs is ryowSets*(5+7) creates and ryowSets*4 deletes; more is duplicates),
// conflicts (Conflict answers to status Updates) and the reconciles per second.
const ryowSets = 40

// ryowPhases are the replicas every ReplicaSet is given in turn.
var ryowPhases = []int32{5, 1, 8}

// ryowStats counts what the Reconciles of one op did.
type ryowStats struct {
	reconciles, creates, deletes, conflicts atomic.Int64
}

func ryowSet(ns, name string, replicas int32) *appsv1.ReplicaSet {
	sel := map[string]string{"set": name}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
}

// ryowPod is the Pod rs is missing.
func ryowPod(rs *appsv1.ReplicaSet) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: rs.Namespace, GenerateName: rs.Name + "-", Labels: rs.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))},
		},
		Spec: rs.Spec.Template.Spec,
	}
}

// ryowOwned keeps the Pods rs controls that are not being deleted, sorted by name (the
// order extra Pods are deleted in).
func ryowOwned(rs *appsv1.ReplicaSet, pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == rs.UID && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out
}

// ryowWriter is what the shared Reconcile body writes through.
type ryowWriter struct {
	create       func(*corev1.Pod) error
	delete       func(*corev1.Pod) error
	updateStatus func(*appsv1.ReplicaSet) error
}

// ryowReconcile is the shared body: rs and pods were read from the cache (rs is the
// caller's copy to change).
func ryowReconcile(rs *appsv1.ReplicaSet, pods []*corev1.Pod, w ryowWriter, st *ryowStats) error {
	st.reconciles.Add(1)
	owned := ryowOwned(rs, pods)
	want := int(ptr.Deref(rs.Spec.Replicas, 1))
	var errs []error
	for range want - len(owned) {
		st.creates.Add(1)
		errs = append(errs, w.create(ryowPod(rs)))
	}
	if extra := len(owned) - want; extra > 0 {
		for _, p := range owned[:extra] {
			st.deletes.Add(1)
			if err := w.delete(p); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
	}
	if rs.Status.Replicas != int32(len(owned)) || rs.Status.ObservedGeneration != rs.Generation {
		rs.Status.Replicas = int32(len(owned))
		rs.Status.ObservedGeneration = rs.Generation
		if err := w.updateStatus(rs); err != nil {
			if apierrors.IsConflict(err) {
				st.conflicts.Add(1)
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ryowImpl starts one library's controller on namespace ns and returns its stop.
type ryowImpl struct {
	name  string
	start func(b *testing.B, cfg *rest.Config, ns string, workers int, st *ryowStats) (stop func())
}

var ryowImpls = []ryowImpl{
	{"ctrlkit", ryowCtrlkit},
	{"controller-runtime-ryow", func(b *testing.B, cfg *rest.Config, ns string, workers int, st *ryowStats) func() {
		return ryowControllerRuntime(b, cfg, ns, workers, st, true)
	}},
	{"controller-runtime", func(b *testing.B, cfg *rest.Config, ns string, workers int, st *ryowStats) func() {
		return ryowControllerRuntime(b, cfg, ns, workers, st, false)
	}},
}

func ryowCtrlkit(b *testing.B, cfg *rest.Config, ns string, workers int, st *ryowStats) func() {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	f := informer.NewFactory(cs, informer.Options{Namespace: ns})
	rss, err := informer.For[*appsv1.ReplicaSet](f)
	if err != nil {
		b.Fatal(err)
	}
	pods, err := informer.For[*corev1.Pod](f)
	if err != nil {
		b.Fatal(err)
	}
	podClient, err := client.For[*corev1.Pod](cs)
	if err != nil {
		b.Fatal(err)
	}
	rsClient, err := client.For[*appsv1.ReplicaSet](cs)
	if err != nil {
		b.Fatal(err)
	}
	metrics, err := controller.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	c, err := controller.New("ryow", controller.ReconcilerFunc[controller.Key](
		func(ctx context.Context, k controller.Key) (controller.Result, error) {
			cached, err := rss.Lister().Get(k.Namespace, k.Name)
			if apierrors.IsNotFound(err) {
				return controller.Result{}, nil
			}
			if err != nil {
				return controller.Result{}, err
			}
			sel, err := metav1.LabelSelectorAsSelector(cached.Spec.Selector)
			if err != nil {
				return controller.Result{}, err
			}
			listed, err := pods.Lister().Namespace(k.Namespace).List(sel)
			if err != nil {
				return controller.Result{}, err
			}
			return controller.Result{}, ryowReconcile(cached.DeepCopy(), listed, ryowWriter{
				create: func(p *corev1.Pod) error { _, err := podClient.Create(ctx, p, metav1.CreateOptions{}); return err },
				delete: func(p *corev1.Pod) error {
					return podClient.Delete(ctx, p.Namespace, p.Name, metav1.DeleteOptions{})
				},
				updateStatus: func(rs *appsv1.ReplicaSet) error {
					_, err := rsClient.UpdateStatus(ctx, rs, metav1.UpdateOptions{})
					return err
				},
			}, st)
		}), controller.Options[controller.Key]{Workers: workers, Metrics: metrics, Fences: &controller.Fences{Auto: true}})
	if err != nil {
		b.Fatal(err)
	}
	if err := controller.Watch(c, rss, controller.EnqueueObject); err != nil {
		b.Fatal(err)
	}
	if err := controller.Owns(c, pods, rss); err != nil {
		b.Fatal(err)
	}
	f.Start(ctx)
	return runUntilStopped(b, cancel, func() error { return c.Run(ctx) }, f.Shutdown)
}

func ryowControllerRuntime(b *testing.B, cfg *rest.Config, ns string, workers int, st *ryowStats, ryow bool) func() {
	ctx, cancel := context.WithCancel(context.Background())
	cl, err := crcluster.New(cfg, func(o *crcluster.Options) {
		o.Scheme = scheme.Scheme
		o.Logger = klog.Background()
		o.Cache = crcache.Options{DefaultNamespaces: map[string]crcache.Config{ns: {}}}
		o.Client = crclient.Options{Cache: &crclient.CacheOptions{EnableReadYourWritesConsistency: ptr.To(ryow)}}
	})
	if err != nil {
		b.Fatal(err)
	}
	c := cl.GetClient()
	ctl, err := crcontroller.NewTypedUnmanaged("ryow-"+strconv.FormatInt(crNames.Add(1), 10), crcontroller.TypedOptions[crreconcile.Request]{
		MaxConcurrentReconciles: workers,
		Logger:                  klog.Background(),
		Reconciler: crreconcile.Func(func(ctx context.Context, req crreconcile.Request) (crreconcile.Result, error) {
			rs := &appsv1.ReplicaSet{}
			if err := c.Get(ctx, req.NamespacedName, rs); err != nil {
				return crreconcile.Result{}, crclient.IgnoreNotFound(err)
			}
			sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
			if err != nil {
				return crreconcile.Result{}, err
			}
			var list corev1.PodList
			if err := c.List(ctx, &list, crclient.InNamespace(req.Namespace), crclient.MatchingLabelsSelector{Selector: sel}); err != nil {
				return crreconcile.Result{}, err
			}
			pods := make([]*corev1.Pod, len(list.Items))
			for i := range list.Items {
				pods[i] = &list.Items[i]
			}
			return crreconcile.Result{}, ryowReconcile(rs, pods, ryowWriter{
				create: func(p *corev1.Pod) error { return c.Create(ctx, p) },
				delete: func(p *corev1.Pod) error { return c.Delete(ctx, p) },
				updateStatus: func(rs *appsv1.ReplicaSet) error {
					return c.Status().Update(ctx, rs)
				},
			}, st)
		}),
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, err := range []error{
		ctl.Watch(crsource.Kind(cl.GetCache(), &appsv1.ReplicaSet{}, &crhandler.TypedEnqueueRequestForObject[*appsv1.ReplicaSet]{})),
		ctl.Watch(crsource.Kind(cl.GetCache(), &corev1.Pod{},
			crhandler.TypedEnqueueRequestForOwner[*corev1.Pod](cl.GetScheme(), cl.GetRESTMapper(), &appsv1.ReplicaSet{}, crhandler.OnlyControllerOwner()))),
	} {
		if err != nil {
			b.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := cl.Start(ctx); err != nil {
			b.Error(err)
		}
	})
	return runUntilStopped(b, cancel, func() error { return ctl.Start(ctx) }, wg.Wait)
}

// ryowConverged reports whether every ReplicaSet of ns has want Pods and says so in its
// status, asking the API server.
func ryowConverged(ctx context.Context, cs kubernetes.Interface, ns string, want int32) (bool, error) {
	rss, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	if len(rss.Items) != ryowSets {
		return false, nil
	}
	for _, rs := range rss.Items {
		if rs.Status.Replicas != want || ptr.Deref(rs.Spec.Replicas, 0) != want || rs.Status.ObservedGeneration != rs.Generation {
			return false, nil
		}
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	per := map[types.UID]int32{}
	for _, p := range pods.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && p.DeletionTimestamp == nil {
			per[ref.UID]++
		}
	}
	for _, rs := range rss.Items {
		if per[rs.UID] != want {
			return false, nil
		}
	}
	return true, nil
}

func BenchmarkReadYourWrites(b *testing.B) {
	env := testkit.NewAPIServer(b)
	cfg := rest.CopyConfig(env.Config())
	cfg.QPS = -1
	cs := env.Client()
	ctx := context.Background()
	var namespaces atomic.Int64
	for _, workers := range []int{5, 20} {
		for _, im := range ryowImpls {
			b.Run(fmt.Sprintf("workers=%d/impl=%s", workers, im.name), func(b *testing.B) {
				var total ryowStats
				ops := 0
				for b.Loop() {
					b.StopTimer()
					ns := "ryow-" + strconv.FormatInt(namespaces.Add(1), 10)
					if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
						b.Fatal(err)
					}
					var st ryowStats
					stop := im.start(b, cfg, ns, workers, &st)
					b.StartTimer()
					for i, replicas := range ryowPhases {
						for s := range ryowSets {
							name := "set-" + strconv.Itoa(s)
							var err error
							if i == 0 {
								_, err = cs.AppsV1().ReplicaSets(ns).Create(ctx, ryowSet(ns, name, replicas), metav1.CreateOptions{})
							} else {
								patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
								_, err = cs.AppsV1().ReplicaSets(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
							}
							if err != nil {
								b.Fatal(err)
							}
						}
						deadline := time.Now().Add(5 * time.Minute)
						for {
							ok, err := ryowConverged(ctx, cs, ns, replicas)
							if err != nil {
								b.Fatal(err)
							}
							if ok {
								break
							}
							if time.Now().After(deadline) {
								b.Fatalf("%d ReplicaSets of %d in %s did not converge in 5 minutes", ryowSets, replicas, ns)
							}
							// Polling the API server more often would load the server the controllers use.
							time.Sleep(50 * time.Millisecond)
						}
					}
					b.StopTimer()
					stop()
					for _, err := range []error{
						cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}),
						cs.AppsV1().ReplicaSets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}),
					} {
						if err != nil {
							b.Fatal(err)
						}
					}
					total.reconciles.Add(st.reconciles.Load())
					total.creates.Add(st.creates.Load())
					total.deletes.Add(st.deletes.Load())
					total.conflicts.Add(st.conflicts.Load())
					ops++
					b.StartTimer()
				}
				per := func(v *atomic.Int64) float64 { return float64(v.Load()) / float64(ops) }
				b.ReportMetric(per(&total.reconciles), "reconciles/op")
				b.ReportMetric(per(&total.creates), "creates/op")
				b.ReportMetric(per(&total.deletes), "deletes/op")
				b.ReportMetric(per(&total.conflicts), "conflicts/op")
				b.ReportMetric(per(&total.reconciles)/(b.Elapsed().Seconds()/float64(ops)), "reconciles/s")
			})
		}
	}
}
