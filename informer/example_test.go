package informer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	kworkqueue "k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

func examplePod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
}

// A factory, a typed informer, a typed handler and a lister: the whole
// read side of a controller.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// ctrlkit's fake cluster: its watches resume from the list's resourceVersion, as an API
	// server's do, so the delete below is seen even if it lands before the watch starts
	// (client-go's plain fake clientset would lose it).
	cluster, err := fakecluster.New(examplePod("default", "web-0", map[string]string{"app": "web"}))
	if err != nil {
		panic(err)
	}
	client := cluster.Clientset()

	f := informer.NewFactory(client, informer.Options{})
	defer f.Shutdown()
	pods, err := informer.For[*corev1.Pod](f)
	if err != nil {
		panic(err)
	}
	events := make(chan string, 10)
	_, err = pods.AddHandler(informer.HandlerFuncs[*corev1.Pod]{
		OnAdd:    func(p *corev1.Pod, initial bool) { events <- fmt.Sprintf("add %s initial=%v", p.Name, initial) },
		OnDelete: func(p *corev1.Pod) { events <- "delete " + p.Name },
	})
	if err != nil {
		panic(err)
	}
	f.Start(ctx)
	if err := f.WaitForCacheSync(ctx); err != nil {
		panic(err)
	}
	fmt.Println(<-events)

	p, err := pods.Lister().Get("default", "web-0")
	fmt.Println(p.Labels["app"], err)
	_, err = pods.Lister().Get("default", "web-1")
	fmt.Println(apierrors.IsNotFound(err), err)

	_ = client.CoreV1().Pods("default").Delete(ctx, "web-0", metav1.DeleteOptions{})
	fmt.Println(<-events)
	// Output:
	// add web-0 initial=true
	// web <nil>
	// true pods "web-1" not found
	// delete web-0
}

// Listers filter by label selector and namespace; results are unordered.
func ExampleLister() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(
		examplePod("a", "web-0", map[string]string{"app": "web"}),
		examplePod("a", "db-0", map[string]string{"app": "db"}),
		examplePod("b", "web-1", map[string]string{"app": "web"}),
	)
	f := informer.NewFactory(client, informer.Options{})
	defer f.Shutdown()
	pods, _ := informer.For[*corev1.Pod](f)
	f.Start(ctx)
	_ = f.WaitForCacheSync(ctx)

	web, _ := pods.Lister().List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	inA, _ := pods.Lister().Namespace("a").List(labels.Everything())
	fmt.Println(sortedNames(web))
	fmt.Println(sortedNames(inA))
	// Output:
	// [a/web-0 b/web-1]
	// [a/db-0 a/web-0]
}

func sortedNames[T metav1.Object](objs []T) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetNamespace()+"/"+o.GetName())
	}
	slices.Sort(out)
	return out
}

// EnqueueMapped maps a Pod event to the key of the ReplicaSet that controls
// it, for a queue of your own (controllers use controller.Watch with
// controller.EnqueueControllerOf, which also checks the owner's UID and scope
// in its cache).
func ExampleEnqueueMapped_owner() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	yes := true
	child := examplePod("default", "web-abcde", nil)
	child.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-uid", Controller: &yes,
	}}
	client := fake.NewClientset(child, examplePod("default", "orphan", nil))

	f := informer.NewFactory(client, informer.Options{})
	defer f.Shutdown()
	pods, _ := informer.For[*corev1.Pod](f)
	queue := kworkqueue.NewTyped[string]()
	defer queue.ShutDown()
	_, _ = pods.AddHandler(informer.EnqueueMapped(queue, func(p *corev1.Pod) []string {
		if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "ReplicaSet" {
			return []string{p.Namespace + "/" + ref.Name}
		}
		return nil
	}))
	f.Start(ctx)
	_ = f.WaitForCacheSync(ctx)

	key, _ := queue.Get() // the orphan enqueues nothing
	fmt.Println(key)
	// The built-in index finds the ReplicaSet's children without a full list.
	children, _ := pods.ByControllerUID("rs-uid")
	fmt.Println(sortedNames(children))
	// Output:
	// default/web
	// [default/web-abcde]
}

// EnqueueMapped feeds keys to any queue with an Add method.
func ExampleEnqueueMapped() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "settings"}})
	f := informer.NewFactory(client, informer.Options{})
	defer f.Shutdown()
	cms, _ := informer.For[*corev1.ConfigMap](f)
	queue := kworkqueue.NewTyped[string]()
	defer queue.ShutDown()
	_, _ = cms.AddHandler(informer.EnqueueMapped(queue, func(cm *corev1.ConfigMap) []string {
		return []string{cache.MetaObjectToName(cm).String()}
	}))
	f.Start(ctx)
	_ = f.WaitForCacheSync(ctx)
	key, _ := queue.Get()
	fmt.Println(key)
	// Output: kube-system/settings
}

// WaitForCacheSync names every informer that did not sync in time. Here the
// API refuses to list ConfigMaps.
func ExampleWaitForCacheSync() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset()
	client.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("configmaps"), "", errors.New("no RBAC"))
	})
	f := informer.NewFactory(client, informer.Options{})
	defer f.Shutdown()
	pods, _ := informer.For[*corev1.Pod](f)
	cms, _ := informer.For[*corev1.ConfigMap](f)
	f.Start(ctx)

	syncCtx, syncCancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer syncCancel()
	err := informer.WaitForCacheSync(syncCtx, pods, cms)
	fmt.Println(err)
	fmt.Println(errors.Is(err, informer.ErrCacheSyncTimeout))
	// Output:
	// caches not synced: configmaps: context deadline exceeded
	// true
}

// For answers with an error, not a panic, for a type it cannot serve.
func ExampleFor_unsupported() {
	f := informer.NewFactory(fake.NewClientset(), informer.Options{})
	_, err := informer.For[*corev1.Binding](f)
	fmt.Println(errors.Is(err, informer.ErrUnsupportedType))
	// Output: true
}

// Per-type transforms (ByObject) shrink the cache further than the default
// managedFields stripping.
func ExampleByObject() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := examplePod("default", "web-0", nil)
	p.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...}"}
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	client := fake.NewClientset(p)

	f := informer.NewFactory(client, informer.Options{
		ByObject: []informer.ObjectOverride{informer.ByObject(informer.ObjectOptions[*corev1.Pod]{Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
			delete(p.Annotations, "kubectl.kubernetes.io/last-applied-configuration")
			return p, nil
		}})},
	})
	defer f.Shutdown()
	pods, _ := informer.For[*corev1.Pod](f)
	f.Start(ctx)
	_ = f.WaitForCacheSync(ctx)
	cached, _ := pods.Lister().Get("default", "web-0")
	fmt.Println(len(cached.Annotations), len(cached.ManagedFields))
	// Output: 0 0
}

// By default equal sub-objects of cached objects are one instance: here the
// labels of a ReplicaSet's Pods. Cached objects are read-only; DeepCopy before
// changing one, which copies the shared parts too. Options.DisableSharing
// keeps every object's own copy.
func ExampleOptions_disableSharing() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var objs []runtime.Object
	for i := range 4 {
		objs = append(objs, examplePod("default", fmt.Sprintf("web-%d", i), map[string]string{"app": "web", "pod-template-hash": "6d9f7c8b5"}))
	}
	distinctLabelMaps := func(opts informer.Options) int {
		f := informer.NewFactory(fake.NewClientset(objs...), opts)
		defer f.Shutdown()
		pods, _ := informer.For[*corev1.Pod](f)
		f.Start(ctx)
		_ = f.WaitForCacheSync(ctx)
		list, _ := pods.Lister().List(labels.Everything())
		seen := map[string]bool{}
		for _, p := range list {
			seen[fmt.Sprintf("%p", p.Labels)] = true
		}

		// Change a cached object only through a copy.
		p := list[0].DeepCopy()
		p.Labels["app"] = "changed"
		cached, _ := pods.Lister().Get("default", list[1].Name)
		fmt.Println(cached.Labels["app"])
		return len(seen)
	}
	fmt.Println(distinctLabelMaps(informer.Options{}) < len(objs))
	fmt.Println(distinctLabelMaps(informer.Options{DisableSharing: true}) == len(objs))
	// Output:
	// web
	// true
	// web
	// true
}

// A metadata-only informer caches names, labels and owner references but no
// spec or status: for controllers that only need to find objects.
func ExampleForMetadata() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	scheme := runtime.NewScheme()
	_ = metav1.AddMetaToScheme(scheme)
	meta := metadatafake.NewSimpleMetadataClient(scheme, &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db-password", Labels: map[string]string{"app": "db"}},
	})
	f := informer.NewFactory(fake.NewClientset(), informer.Options{MetadataClient: meta})
	defer f.Shutdown()
	secrets, err := informer.ForMetadata(f, corev1.SchemeGroupVersion.WithResource("secrets"))
	if err != nil {
		panic(err)
	}
	f.Start(ctx)
	_ = f.WaitForCacheSync(ctx)
	s, _ := secrets.Lister().Get("default", "db-password")
	fmt.Println(secrets.Name(), s.Labels["app"])
	// Output: secrets (metadata) db
}

// The mutation detector reports a cached object changed in place, naming the
// object and the field. Tests get it from testkit; here the check runs
// on demand.
func ExampleOptions_mutationDetector() {
	client := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: "web", ResourceVersion: "1", Labels: map[string]string{"app": "web"},
	}})
	factory := informer.NewFactory(client, informer.Options{
		MutationDetector: true,
		MutationReport:   func(err error) { fmt.Println("periodic check:", err) },
		Clock:            testingclock.NewFakeClock(time.Now()),
	})
	defer factory.Shutdown()
	pods, err := informer.For[*corev1.Pod](factory)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx)
	if err := factory.WaitForCacheSync(ctx); err != nil {
		panic(err)
	}

	pod, err := pods.Lister().Get("default", "web")
	if err != nil {
		panic(err)
	}
	pod.Labels["app"] = "db" // wrong: DeepCopy first
	fmt.Println(factory.CheckMutations())
	fmt.Println(factory.CheckMutations()) // each change is reported once
	// Output:
	// informer pods: cached Pod "default/web" was changed in place at metadata.labels["app"] ("web" -> "db"); cached objects are read-only: DeepCopy before changing one
	// <nil>
}

// A named factory's typed informers report client-go's informer metrics
// (informer_queued_items, informer_store_resource_version, ...) under its
// name, through the provider a manager.Manager registers. The name is the
// factory's until Shutdown; a second factory asking for it meanwhile is told
// through its error handler and runs without metrics.
func ExampleOptions_informerName() {
	f := informer.NewFactory(fake.NewClientset(), informer.Options{InformerName: "example-controller"})
	other := informer.NewFactory(fake.NewClientset(), informer.Options{
		InformerName: "example-controller",
		ErrorHandler: func(_ context.Context, err error) {
			fmt.Println("second factory:", errors.Is(err, informer.ErrInformerNameInUse))
		},
	})
	defer other.Shutdown()
	fmt.Printf("%q %q\n", f.InformerName(), other.InformerName())

	f.Shutdown()
	again := informer.NewFactory(fake.NewClientset(), informer.Options{InformerName: "example-controller"})
	defer again.Shutdown()
	fmt.Printf("%q %q\n", f.InformerName(), again.InformerName())
	// Output:
	// second factory: true
	// "example-controller" ""
	// "" "example-controller"
}

// One Options value configures a factory: here one namespace, a logger,
// and, for Pods alone (ByObject), a transform that drops an annotation and
// a memory budget. Fields left zero keep their defaults.
func ExampleOptions() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	web := examplePod("default", "web-0", nil)
	web.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...}"}
	other := examplePod("other", "db-0", nil)

	f := informer.NewFactory(fake.NewClientset(web, other), informer.Options{
		Namespace: "default",
		ByObject: []informer.ObjectOverride{
			informer.ByObject(informer.ObjectOptions[*corev1.Pod]{
				Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
					delete(p.Annotations, "kubectl.kubernetes.io/last-applied-configuration")
					return p, nil
				},
				MemoryBudget: 64 << 20,
				BudgetPolicy: informer.BudgetFailReadiness,
			}),
		},
	})
	defer f.Shutdown()
	pods, err := informer.For[*corev1.Pod](f)
	if err != nil {
		panic(err)
	}
	f.Start(ctx)
	if err := f.WaitForCacheSync(ctx); err != nil {
		panic(err)
	}
	list, _ := pods.Lister().List(labels.Everything())
	for _, p := range list {
		fmt.Println(p.Namespace, p.Name, len(p.Annotations))
	}
	for _, b := range f.MemoryBudgets() {
		fmt.Println(b.Policy, b.Over, f.CheckMemoryBudget())
	}
	// Output:
	// default web-0 0
	// fail-readiness false <nil>
}

// Code written against client-go's generated informers (a controller ported
// from kube-controller-manager) takes them from SharedInformerFactory: they
// are the factory's own, shared with For, and start with the factory.
func ExampleFactory_SharedInformerFactory() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(examplePod("default", "web-0", nil))
	f := informer.NewFactory(client, informer.Options{})
	defer f.Shutdown()

	podLister := f.SharedInformerFactory().Core().V1().Pods().Lister() // client-go's lister
	pods, err := informer.For[*corev1.Pod](f)                          // the same informer
	if err != nil {
		panic(err)
	}
	f.Start(ctx)
	if err := f.WaitForCacheSync(ctx); err != nil {
		panic(err)
	}
	p, err := podLister.Pods("default").Get("web-0")
	fmt.Println(p.Name, err)
	lists := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == "list" {
			lists++
		}
	}
	all, err := pods.Lister().List(labels.Everything())
	fmt.Println(lists, "list,", len(all), "pod,", err)
	// Output:
	// web-0 <nil>
	// 1 list, 1 pod, <nil>
}
