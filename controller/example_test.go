package controller_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/predicate"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ctrlkit/ctrlkit/provenance"
)

func ExampleParseKey() {
	k, err := controller.ParseKey("kube-system/coredns")
	fmt.Println(k.Namespace, k.Name, err)
	k, _ = controller.ParseKey("node-1")
	fmt.Printf("%q %q\n", k.Namespace, k.String())
	_, err = controller.ParseKey("a/b/c")
	fmt.Println(errors.Is(err, controller.ErrInvalidKey))
	// Output:
	// kube-system coredns <nil>
	// "" "node-1"
	// true
}

func ExampleTerminal() {
	err := fmt.Errorf("reconciling default/web: %w", controller.Terminal(errors.New("spec.replicas is negative")))
	fmt.Println(controller.IsTerminal(err))
	fmt.Println(err)
	// Output:
	// true
	// reconciling default/web: terminal: spec.replicas is negative
}

// A controller run on its own: the Reconciler fails twice, then succeeds; the
// loop retries with backoff in between.
func ExampleNew() {
	done := make(chan struct{})
	attempts := 0
	r := controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
		attempts++
		if attempts < 3 {
			return controller.Result{}, fmt.Errorf("attempt %d: API server busy", attempts)
		}
		fmt.Printf("reconciled %s after %d attempts\n", key, attempts)
		close(done)
		return controller.Result{}, nil
	})
	c, err := controller.New("example", r, controller.Options[controller.Key]{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- c.Run(ctx) }()

	c.Enqueue(controller.Key{Namespace: "default", Name: "web"})
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
	cancel()
	fmt.Println("run returned:", <-stopped)
	// Output:
	// reconciled default/web after 3 attempts
	// run returned: <nil>
}

func ExampleNew_invalidOptions() {
	noop := controller.ReconcilerFunc[string](func(context.Context, string) (controller.Result, error) { return controller.Result{}, nil })
	_, err := controller.New("bad", noop, controller.Options[string]{Workers: -2})
	fmt.Println(err)
	_, err = controller.New("nil", controller.ReconcilerFunc[string](nil), controller.Options[string]{})
	fmt.Println(err)
	fmt.Println(errors.Is(err, controller.ErrInvalidOptions))
	// Output:
	// controller "bad": invalid Workers: -2 is negative
	// controller "nil": invalid Reconciler: nil
	// true
}

// A retry policy is one value composed of Backoff, Every, BackoffForever and
// GiveUp; the zero value is the default, Backoff(15, Every(5*time.Minute)).
func ExampleRetry() {
	noop := controller.ReconcilerFunc[string](func(context.Context, string) (controller.Result, error) { return controller.Result{}, nil })
	for _, retry := range []controller.Retry{
		{}, // the default
		controller.Backoff(15, controller.GiveUp()), // kube-controller-manager's endpoint controllers
		controller.BackoffForever(),                 // controller-runtime's
		controller.Backoff(5, controller.Every(time.Minute)),
		controller.Backoff(-1, controller.GiveUp()),
	} {
		_, err := controller.New("c", noop, controller.Options[string]{Retry: retry})
		fmt.Println(err)
	}
	// Output:
	// <nil>
	// <nil>
	// <nil>
	// <nil>
	// controller "c": invalid Retry: Backoff(-1): a negative count of retries
}

// The issue's snippet: ReplicaSets enqueue themselves, Pods enqueue the
// ReplicaSet that controls them.
func ExampleWatch() {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "rs-uid"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-x7k2p",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}}}
	client := fake.NewClientset(rs, pod)
	f := informer.NewFactory(client, informer.Options{})
	rsInformer, _ := informer.For[*appsv1.ReplicaSet](f)
	podInformer, _ := informer.For[*corev1.Pod](f)

	seen := make(chan controller.Key, 10)
	r := controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
		pods, _ := podInformer.Lister().List(labels.Everything())
		fmt.Printf("reconcile %s: %d pod(s) in the cache\n", key, len(pods))
		seen <- key
		return controller.Result{}, nil
	})
	c, _ := controller.New("replicaset", r, controller.Options[controller.Key]{Workers: 5})
	_ = controller.Watch(c, rsInformer, controller.EnqueueObject)
	_ = controller.Watch(c, podInformer, controller.EnqueueControllerOf[*corev1.Pod](rsInformer))

	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx)
	stopped := make(chan error)
	go func() { stopped <- c.Run(ctx) }()
	<-seen // both events map to one key, reconciled once: the queue deduplicates
	cancel()
	<-stopped
	f.Shutdown()
	// Output:
	// reconcile default/web: 1 pod(s) in the cache
}

// GenerationChanged on the primary type keeps a controller from reconciling
// its own status writes: the API server bumps generation on spec changes
// only. The Reconcile below records the generation it acted on in
// status.observedGeneration; without the predicate each of its status writes
// would come back as an update event and a reconcile with nothing to do.
// The in-memory cluster (fakecluster, the one under testkit.NewFake)
// bumps generation as an API server does.
func ExampleWithPredicates() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cluster, _ := fakecluster.New(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: new(int32(1))}})
	client := cluster.Clientset()
	f := informer.NewFactory(client, informer.Options{})
	defer f.Shutdown()
	deployments, _ := informer.For[*appsv1.Deployment](f)

	wrote := make(chan struct{})
	r := controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
		d, err := deployments.Lister().Get(key.Namespace, key.Name)
		if err != nil {
			return controller.Result{}, nil // deleted
		}
		fmt.Printf("reconcile %s: generation %d, observed %d\n", key, d.Generation, d.Status.ObservedGeneration)
		if d.Status.ObservedGeneration == d.Generation {
			return controller.Result{}, nil
		}
		d = d.DeepCopy() // cached objects are read-only
		d.Status.ObservedGeneration = d.Generation
		if _, err := client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
			return controller.Result{}, err
		}
		select {
		case wrote <- struct{}{}:
		case <-ctx.Done():
		}
		return controller.Result{}, nil
	})
	c, _ := controller.New("deployments", r, controller.Options[controller.Key]{})
	_ = controller.Watch(c, deployments, controller.EnqueueObject,
		controller.WithPredicates(predicate.GenerationChanged[*appsv1.Deployment]()))

	f.Start(ctx)
	stopped := make(chan error)
	go func() { stopped <- c.Run(ctx) }()
	<-wrote // the status write's own event is dropped: no reconcile follows

	// A spec change bumps generation: reconciled.
	d, _ := client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
	d.Spec.Replicas = new(int32(3))
	_, _ = client.AppsV1().Deployments("default").Update(ctx, d, metav1.UpdateOptions{})
	<-wrote
	cancel()
	<-stopped
	// Output:
	// reconcile default/web: generation 1, observed 0
	// reconcile default/web: generation 2, observed 1
}

// Owns in one line: Pods enqueue the ReplicaSet that controls them, and
// their resyncs are dropped.
func ExampleOwns() {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "rs-uid"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-x7k2p",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}}}
	f := informer.NewFactory(fake.NewClientset(rs, pod), informer.Options{})
	pods, _ := informer.For[*corev1.Pod](f)
	replicaSets, _ := informer.For[*appsv1.ReplicaSet](f)

	seen := make(chan controller.Key, 1)
	r := controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
		seen <- key
		return controller.Result{}, nil
	})
	c, _ := controller.New("replicaset", r, controller.Options[controller.Key]{})
	if err := controller.Owns(c, pods, replicaSets); err != nil {
		fmt.Println(err)
		return
	}

	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx)
	stopped := make(chan error)
	go func() { stopped <- c.Run(ctx) }()
	fmt.Println("reconcile", <-seen)
	cancel()
	<-stopped
	f.Shutdown()
	// Output:
	// reconcile default/web
}

// A controller built without Options.Metrics reports into the Metrics of the context it runs
// with: how a manager.Manager gives every controller its registry. Stats tells a test (or a
// probe) how much is queued, running and retrying.
func ExampleWithMetrics() {
	reg := prometheus.NewRegistry()
	m, _ := controller.NewMetrics(reg)
	done := make(chan struct{})
	c, _ := controller.New("audit", controller.ReconcilerFunc[controller.Key](
		func(context.Context, controller.Key) (controller.Result, error) {
			close(done)
			return controller.Result{}, nil
		}), controller.Options[controller.Key]{})
	c.Enqueue(controller.Key{Namespace: "default", Name: "web"})
	fmt.Printf("before Run: %+v\n", c.Stats())

	ctx, cancel := context.WithCancel(controller.WithMetrics(context.Background(), m))
	stopped := make(chan error)
	go func() { stopped <- c.Run(ctx) }()
	<-done
	cancel()
	<-stopped
	fmt.Println("reconciles counted:", counterValue(reg, "controller_runtime_reconcile_total", "audit", "success"))
	// Output:
	// before Run: {Queued:1 InFlight:0 Retrying:0 SlowRetrying:0 Fenced:0 Settling:0 Stale:0 Lagging:}
	// reconciles counted: 1
}

// counterValue reads one series of a counter vector labelled controller and result.
func counterValue(g prometheus.Gatherer, name, ctrl, result string) float64 {
	mfs, _ := g.Gather()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["controller"] == ctrl && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}

// With Options.Provenance every Reconcile can tell why it runs: the triggers merged into its
// key while it waited (events with their informer and object, resyncs, retries, requeues,
// Enqueue calls), counted, with the first and the last in full. The same record is on the
// "Reconciling" line logged at -v=2.
func ExampleReasonsFrom() {
	done := make(chan struct{})
	r := controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
		why := controller.ReasonsFrom(ctx)
		fmt.Printf("reconcile %s: %d triggers, %d of them events\n", key, why.Total, why.Count(provenance.TriggerEvent))
		fmt.Println(why)
		close(done)
		return controller.Result{}, nil
	})
	c, _ := controller.New("replicaset", r, controller.Options[controller.Key]{Provenance: &controller.Provenance{}})

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-x7k2p"}}
	key := controller.Key{Namespace: "default", Name: "web"}
	c.EnqueueWithTrigger(key, provenance.EventTrigger("pods", provenance.EventDelete, pod))
	c.Enqueue(key) // deduplicated into the same reconcile, and recorded

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- c.Run(ctx) }()
	<-done
	cancel()
	<-stopped
	// Output:
	// reconcile default/web: 2 triggers, 1 of them events
	// 2 triggers (event=1 manual=1); first: event:delete pods default/web-x7k2p; last: manual
}

// A Reconcile that writes an object fences its key: the next Reconcile of the key waits until
// the informer's cache shows the write, so it never reads the version its own write replaced.
// Here each call increments a counter in a ConfigMap and asks to run again at once; every call
// sees the previous call's write. Fences.Auto records the fence by itself for writes through
// a ctrlkit client (client.For); with any other client, call Fence.
func ExampleFence() {
	cluster, _ := fakecluster.New(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "counter"},
		Data: map[string]string{"count": "0"}})
	f := informer.NewFactory(cluster.Clientset(), informer.Options{})
	cms, _ := informer.For[*corev1.ConfigMap](f)

	done := make(chan struct{})
	var finish sync.Once
	r := controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
		cm, err := cms.Lister().Get(key.Namespace, key.Name)
		if err != nil {
			return controller.Result{}, err
		}
		n, _ := strconv.Atoi(cm.Data["count"])
		if n == 3 { // done: later events find nothing to do
			finish.Do(func() { fmt.Println("count in the cache:", n); close(done) })
			return controller.Result{}, nil
		}
		fmt.Println("count in the cache:", n)
		cm = cm.DeepCopy()
		cm.Data["count"] = strconv.Itoa(n + 1)
		written, err := cluster.Clientset().CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
		if err != nil {
			return controller.Result{}, err // a Conflict here would mean a stale read
		}
		controller.Fence(ctx, cms, written)
		return controller.Result{Requeue: true}, nil
	})
	c, _ := controller.New("counter", r, controller.Options[controller.Key]{Fences: &controller.Fences{}})
	_ = controller.Watch(c, cms, controller.EnqueueObject)

	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx)
	stopped := make(chan error)
	go func() { stopped <- c.Run(ctx) }()
	<-done
	cancel()
	<-stopped
	f.Shutdown()
	// Output:
	// count in the cache: 0
	// count in the cache: 1
	// count in the cache: 2
	// count in the cache: 3
}

// With Fences.Auto the writes a Reconcile makes through ctrlkit's clients fence its key by
// themselves, on the informer the controller watches for the written type. Each call below
// increments a counter in the cached ConfigMap and writes it back with the cached
// resourceVersion: without the fence the call after a write could read the old version and
// its write would conflict.
func ExampleFences() {
	cluster, _ := fakecluster.New(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "counter"},
		Data: map[string]string{"count": "0"}})
	f := informer.NewFactory(cluster.Clientset(), informer.Options{})
	cms, _ := informer.For[*corev1.ConfigMap](f)
	cmClient, _ := client.For[*corev1.ConfigMap](cluster.Clientset())

	done := make(chan struct{})
	var finish sync.Once
	r := controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
		cm, err := cms.Lister().Get(key.Namespace, key.Name)
		if err != nil {
			return controller.Result{}, err
		}
		n, _ := strconv.Atoi(cm.Data["count"])
		if n == 3 { // done: later events find nothing to do
			finish.Do(func() { fmt.Println("counted to", n); close(done) })
			return controller.Result{}, nil
		}
		cm = cm.DeepCopy()
		cm.Data["count"] = strconv.Itoa(n + 1)
		if _, err := cmClient.Update(ctx, cm, metav1.UpdateOptions{}); err != nil { // fenced
			fmt.Println("stale read:", err)
			return controller.Result{}, err
		}
		return controller.Result{Requeue: true}, nil
	})
	c, _ := controller.New("counter", r, controller.Options[controller.Key]{Fences: &controller.Fences{Auto: true}})
	_ = controller.Watch(c, cms, controller.EnqueueObject)

	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx)
	stopped := make(chan error)
	go func() { stopped <- c.Run(ctx) }()
	<-done
	cancel()
	<-stopped
	f.Shutdown()
	// Output:
	// counted to 3
}

// With Flows, namespaces take turns: the key of a quiet namespace, queued
// behind a noisy namespace's burst, is the second one reconciled, not the
// fifth. (Keys enqueued before Run are queued when it starts, in order.)
func ExampleFlowByNamespace() {
	var mu sync.Mutex
	var order []string
	done := make(chan struct{})
	r := controller.ReconcilerFunc[controller.Key](func(_ context.Context, k controller.Key) (controller.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, k.String())
		if len(order) == 5 {
			close(done)
		}
		return controller.Result{}, nil
	})
	c, err := controller.New("tenants", controller.Reconciler[controller.Key](r), controller.Options[controller.Key]{
		Flows: controller.FlowByNamespace,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := range 4 {
		c.Enqueue(controller.Key{Namespace: "noisy", Name: "obj-" + strconv.Itoa(i)})
	}
	c.Enqueue(controller.Key{Namespace: "quiet", Name: "obj"})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- c.Run(ctx) }()
	<-done
	cancel()
	<-stopped
	for _, k := range order {
		fmt.Println(k)
	}
	// Output:
	// noisy/obj-0
	// quiet/obj
	// noisy/obj-1
	// noisy/obj-2
	// noisy/obj-3
}
