package informer

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

func countActions(c *k8stesting.Fake, verb, resource string) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

// Two controllers asking the same factory for Pods share one informer and
// the API sees exactly one list and one watch.
func TestForSharesOneInformerAndOneWatch(t *testing.T) {
	client := newClient(pod("a", "p1", nil))
	f := NewFactory(client, Options{})

	first, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	second, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	assert.Same(t, first.(*sharedInformer[*corev1.Pod]), second.(*sharedInformer[*corev1.Pod]))
	// The client-go generated informer is the same shared informer too.
	// client-go wraps it anew on every call, so compare the shared store.
	assert.Same(t, f.SharedInformerFactory().Core().V1().Pods().Informer().GetIndexer(), first.Informer().GetIndexer())

	one, two := newEventLog[*corev1.Pod](), newEventLog[*corev1.Pod]()
	_, err = first.AddHandler(one)
	require.NoError(t, err)
	_, err = second.AddHandler(two)
	require.NoError(t, err)
	startFactory(t, f)

	assert.Equal(t, event{op: "add", key: "a/p1", initial: true}, one.next(t))
	assert.Equal(t, event{op: "add", key: "a/p1", initial: true}, two.next(t))
	assert.Equal(t, 1, countActions(&client.Fake, "list", "pods"))
	require.Eventually(t, func() bool { return countActions(&client.Fake, "watch", "pods") >= 1 }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, 1, countActions(&client.Fake, "watch", "pods"))
	assert.Equal(t, "pods", first.Name())
	assert.Equal(t, corev1.SchemeGroupVersion.WithResource("pods"), first.GVR())
	assert.Equal(t, corev1.SchemeGroupVersion.WithKind("Pod"), first.GVK())
}

// Creates, updates and deletes through the clientset reach the handler as
// typed events, in order.
func TestTypedEvents(t *testing.T) {
	ctx := context.Background()
	client := newClient(pod("a", "existing", nil))
	f := NewFactory(client, Options{})
	pods, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	log := newEventLog[*corev1.Pod]()
	_, err = pods.AddHandler(log)
	require.NoError(t, err)
	startFactory(t, f)

	assert.Equal(t, event{op: "add", key: "a/existing", initial: true}, log.next(t))

	p, err := client.CoreV1().Pods("a").Create(ctx, pod("a", "new", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, event{op: "add", key: "a/new"}, log.next(t))

	p = p.DeepCopy()
	p.Labels = map[string]string{"x": "y"}
	_, err = client.CoreV1().Pods("a").Update(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, event{op: "update", key: "a/new"}, log.next(t))

	require.NoError(t, client.CoreV1().Pods("a").Delete(ctx, "new", metav1.DeleteOptions{}))
	assert.Equal(t, event{op: "delete", key: "a/new"}, log.next(t))
}

// An informer requested after Start is started at once.
func TestForAfterStart(t *testing.T) {
	client := newClient(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cm"}})
	f := NewFactory(client, Options{})
	_, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	startFactory(t, f)

	cms, err := For[*corev1.ConfigMap](f)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, WaitForCacheSync(ctx, cms))
	got, err := cms.Lister().Get("a", "cm")
	require.NoError(t, err)
	assert.Equal(t, "cm", got.Name)
}

// unknownType is a runtime.Object no scheme knows.
type unknownType struct {
	metav1.TypeMeta
	metav1.ObjectMeta
}

func (u *unknownType) DeepCopyObject() runtime.Object {
	c := *u
	u.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

func TestForUnsupportedType(t *testing.T) {
	f := NewFactory(newClient(), Options{})
	_, err := For[*autoscalingv1.Scale](f) // in the scheme, but a subresource
	require.ErrorIs(t, err, ErrUnsupportedType)
	assert.Contains(t, err.Error(), "k8s.io/api/autoscaling/v1.Scale")

	_, err = For[*unknownType](f)
	require.ErrorIs(t, err, ErrUnsupportedType)

	_, err = For[*corev1.Binding](f) // in the scheme, no informer
	require.ErrorIs(t, err, ErrUnsupportedType)
	// A failed lookup leaves nothing behind to start.
	assert.Empty(t, f.informers)
}

// Every API type in client-go's scheme that the factory serves maps to the
// very informer client-go's generated accessor uses for that Go type: the
// scheme + plural-rule mapping agrees with informers' generic map everywhere.
func TestForEveryServedType(t *testing.T) {
	f := NewFactory(newClient(), Options{})
	served := map[reflect.Type]bool{}
	for gvk, typ := range scheme.Scheme.AllKnownTypes() {
		ptr := reflect.PointerTo(typ)
		if served[ptr] || gvk.Version == runtime.APIVersionInternal {
			continue
		}
		_, gvr, inf, err := f.resolveTyped(ptr, f.typed, f.cfg.namespace, f.cfg.tweak)
		if err != nil {
			require.ErrorIs(t, err, ErrUnsupportedType)
			continue
		}
		served[ptr] = true
		obj := reflect.New(typ).Interface().(runtime.Object)
		// InformerFor returns the informer the factory already keeps for
		// this Go type; it only calls newFunc if there is none.
		byType := f.typed.InformerFor(obj, func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
			t.Errorf("%s resolved to %v, but the factory keeps no informer for its Go type", object.TypeName(ptr), gvr)
			return cache.NewSharedIndexInformer(nil, obj, 0, cache.Indexers{})
		})
		// client-go wraps the shared informer anew on every call, so
		// compare the shared store.
		assert.Same(t, byType.GetIndexer(), inf.GetIndexer(), "%s -> %v", object.TypeName(ptr), gvr)
	}
	for _, obj := range []runtime.Object{
		&corev1.Pod{}, &corev1.ConfigMap{}, &corev1.Secret{}, &corev1.Node{}, &corev1.Endpoints{},
		&corev1.Service{}, &corev1.Namespace{}, &corev1.ComponentStatus{}, &appsv1.ReplicaSet{},
		&appsv1.Deployment{}, &batchv1.Job{}, &networkingv1.Ingress{}, &networkingv1.NetworkPolicy{},
		&rbacv1.ClusterRole{}, &coordinationv1.Lease{}, &discoveryv1.EndpointSlice{}, &eventsv1.Event{},
	} {
		assert.True(t, served[reflect.TypeOf(obj)], "%T not served", obj)
	}
	t.Logf("%d Go types served", len(served))
}

func TestTransforms(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	newPod := func() *corev1.Pod {
		p := pod("a", "p", nil)
		p.ManagedFields = managed
		p.Annotations = map[string]string{"big": "value"}
		return p
	}

	t.Run("managedFields stripped by default", func(t *testing.T) {
		f := NewFactory(newClient(newPod()), Options{})
		pods, err := For[*corev1.Pod](f)
		require.NoError(t, err)
		startFactory(t, f)
		got, err := pods.Lister().Get("a", "p")
		require.NoError(t, err)
		assert.Nil(t, got.ManagedFields)
		assert.Equal(t, "value", got.Annotations["big"])
	})

	t.Run("stripping can be turned off", func(t *testing.T) {
		f := NewFactory(newClient(newPod()), Options{KeepManagedFields: true})
		pods, err := For[*corev1.Pod](f)
		require.NoError(t, err)
		startFactory(t, f)
		got, err := pods.Lister().Get("a", "p")
		require.NoError(t, err)
		assert.Equal(t, managed, got.ManagedFields)
	})

	t.Run("per-type transforms compose and apply only to their type", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cm", Annotations: map[string]string{"big": "value"}}}
		f := NewFactory(newClient(newPod(), cm), Options{
			ByObject: []ObjectOverride{ByObject(ObjectOptions[*corev1.Pod]{Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
				p.Annotations = nil
				return p, nil
			}}), ByObject(ObjectOptions[*corev1.Pod]{Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
				p.Labels = map[string]string{"transformed": "twice"}
				return p, nil
			}})},
		},
		)
		pods, err := For[*corev1.Pod](f)
		require.NoError(t, err)
		cms, err := For[*corev1.ConfigMap](f)
		require.NoError(t, err)
		startFactory(t, f)
		got, err := pods.Lister().Get("a", "p")
		require.NoError(t, err)
		assert.Nil(t, got.Annotations)
		assert.Equal(t, "twice", got.Labels["transformed"])
		gotCM, err := cms.Lister().Get("a", "cm")
		require.NoError(t, err)
		assert.Equal(t, "value", gotCM.Annotations["big"])
	})

	t.Run("a failing transform is reported and the object cached", func(t *testing.T) {
		sink := &errorSink{}
		boom := errors.New("boom")
		f := NewFactory(newClient(newPod()), Options{
			ErrorHandler: sink.handle,
			ByObject:     []ObjectOverride{ByObject(ObjectOptions[*corev1.Pod]{Transform: func(p *corev1.Pod) (*corev1.Pod, error) { return nil, boom }})},
		})
		pods, err := For[*corev1.Pod](f)
		require.NoError(t, err)
		startFactory(t, f)
		got, err := pods.Lister().Get("a", "p")
		require.NoError(t, err)
		assert.Equal(t, "p", got.Name)
		errs := sink.all()
		require.Len(t, errs, 1)
		assert.ErrorIs(t, errs[0], boom)
		assert.Contains(t, errs[0].Error(), "k8s.io/api/core/v1.Pod")
	})
}

func TestOptionsReachTheAPI(t *testing.T) {
	client := newClient(pod("a", "in", map[string]string{"app": "x"}), pod("b", "other-ns", map[string]string{"app": "x"}),
		pod("a", "unlabelled", nil))
	f := NewFactory(client, Options{
		Namespace: "a",
		TweakListOptions: func(o *metav1.ListOptions) {
			o.LabelSelector = "app=x"
		},
	})
	pods, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	startFactory(t, f)
	// The watch starts right after the list that synced the cache.
	require.Eventually(t, func() bool { return countActions(&client.Fake, "watch", "pods") == 1 }, 10*time.Second, 5*time.Millisecond)
	var seen int
	for _, a := range client.Actions() {
		switch a := a.(type) {
		case k8stesting.ListAction:
			assert.Equal(t, "a", a.GetNamespace())
			assert.Equal(t, "app=x", a.GetListRestrictions().Labels.String())
			seen++
		case k8stesting.WatchAction:
			assert.Equal(t, "a", a.GetNamespace())
			assert.Equal(t, "app=x", a.GetWatchRestrictions().Labels.String())
			seen++
		}
	}
	assert.Equal(t, 2, seen, "one list and one watch")
	// The fake applies the namespace and label selector to lists.
	all, err := pods.Lister().List(nil)
	require.NoError(t, err)
	require.Len(t, all, 1)
	assert.Equal(t, "in", all[0].Name)
}

func TestShutdown(t *testing.T) {
	f := NewFactory(newClient(pod("a", "p", nil)), Options{})
	pods, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	startFactory(t, f)
	f.Shutdown() // stops the informers without the Start context ending
	assert.True(t, pods.Informer().IsStopped())
	f.Shutdown() // idempotent

	// Start after Shutdown starts nothing.
	cms, err := For[*corev1.ConfigMap](f)
	require.NoError(t, err)
	f.Start(context.Background())
	assert.False(t, cms.HasSynced())

	// Shutdown without Start returns at once.
	NewFactory(newClient(), Options{}).Shutdown()
}

// The resources a GVR names are identified by group and resource.
func TestNamesOfGroupedResources(t *testing.T) {
	f := NewFactory(newClient(), Options{})
	rs, err := For[*appsv1.ReplicaSet](f)
	require.NoError(t, err)
	assert.Equal(t, "replicasets.apps", rs.Name())
	assert.Equal(t, "replicasets.apps", rs.String())
	assert.Equal(t, schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}, rs.GVR())
}

func TestNilFactory(t *testing.T) {
	_, err := For[*corev1.Pod](nil)
	require.ErrorIs(t, err, ErrNoClient)
	_, err = ForMetadata(nil, secretsGVR)
	require.ErrorIs(t, err, ErrNoClient)
	_, err = ForResource[*widget](nil, widgetsGVR)
	require.ErrorIs(t, err, ErrNoClient)

	// A factory without a clientset still serves custom resources.
	crdOnly := NewFactory(nil, Options{DynamicClient: newDynamic(unstructuredWidget("a", "w", int64(1)))})
	_, err = For[*corev1.Pod](crdOnly)
	require.ErrorIs(t, err, ErrNoClient)
	widgets, err := ForResource[*widget](crdOnly, widgetsGVR)
	require.NoError(t, err)
	startFactory(t, crdOnly)
	w, err := widgets.Lister().Get("a", "w")
	require.NoError(t, err)
	assert.Equal(t, 1, w.Spec.Size)
}

// Options.Logger reaches the error handler through its context, so a
// custom handler can log with the factory's logger.
func TestWithLoggerReachesTheErrorHandler(t *testing.T) {
	var logged []string
	logger := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})
	var fromCtx klog.Logger
	f := NewFactory(newClient(), Options{
		Logger: logger.WithValues("component", "test"),
		ErrorHandler: func(ctx context.Context, err error) {
			fromCtx = klog.FromContext(ctx)
			fromCtx.Error(err, "reported")
		},
	})
	f.report(errors.New("boom"))
	require.Len(t, logged, 1)
	assert.Contains(t, logged[0], `"component"="test"`)
	assert.Contains(t, logged[0], `"error"="boom"`)
}

// A removed handler hears nothing more; the others carry on.
func TestRemoveHandler(t *testing.T) {
	ctx := context.Background()
	client := newClient()
	f := NewFactory(client, Options{})
	pods, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	removed, kept := &recorder[string]{}, newEventLog[*corev1.Pod]()
	reg, err := pods.AddHandler(EnqueueMapped(removed, ownKey[*corev1.Pod]))
	require.NoError(t, err)
	_, err = pods.AddHandler(kept)
	require.NoError(t, err)
	startFactory(t, f)
	require.NoError(t, pods.RemoveHandler(reg))

	_, err = client.CoreV1().Pods("a").Create(ctx, pod("a", "p", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, event{op: "add", key: "a/p"}, kept.next(t))
	// client-go detaches a removed listener synchronously: it is never
	// handed the event, however late its goroutine runs.
	assert.Empty(t, removed.got())
}
