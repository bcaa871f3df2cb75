package informer

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// scopedCluster is a fake cluster (which honours selectors on list and
// watch, as an API server does) and a factory on it with the mutation
// detector on.
func scopedCluster(t *testing.T, objs ...runtime.Object) (kubernetes.Interface, *Factory) {
	t.Helper()
	c, err := fakecluster.New(objs...)
	require.NoError(t, err)
	f := NewFactory(c.Clientset(), Options{MutationDetector: true, MutationReport: func(err error) { t.Errorf("%v", err) }})
	return c.Clientset(), f
}

func cm(ns, name string, lbls map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}}
}

func keysOf[T Object](objs []T) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, objectKey(o))
	}
	return out
}

// take waits for the next want events.
func (l *eventLog[T]) take(t *testing.T, want int) []event {
	t.Helper()
	out := make([]event, 0, want)
	for range want {
		out = append(out, l.next(t))
	}
	return out
}

// none fails if an event is waiting. Used after a later event proved the
// stream moved past the writes under test.
func (l *eventLog[T]) none(t *testing.T) {
	t.Helper()
	select {
	case e := <-l.ch:
		t.Fatalf("unexpected event %+v", e)
	default:
	}
}

func TestScopeNamespaces(t *testing.T) {
	ctx := context.Background()
	owner := controllerRef("apps/v1", "ReplicaSet", "rs", "rs-uid")
	client, f := scopedCluster(t,
		pod("a", "p1", nil, owner), pod("b", "p2", nil, owner), pod("c", "p3", nil, owner), pod("b", "p4", nil))
	pods, err := For(f, InNamespaces[*corev1.Pod]("b", "a"))
	require.NoError(t, err)
	log := newEventLog[*corev1.Pod]()
	reg, err := pods.AddHandler(log)
	require.NoError(t, err)
	startFactory(t, f)
	require.True(t, pods.HasSynced())
	require.Eventually(t, reg.HasSynced, 10*time.Second, time.Millisecond)

	all, err := pods.Lister().List(labels.Everything())
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a/p1", "b/p2", "b/p4"}, keysOf(all), "c is not cached")
	got, err := pods.Lister().Get("b", "p2")
	require.NoError(t, err)
	assert.Equal(t, "p2", got.Name)
	_, err = pods.Lister().Get("c", "p3")
	assert.True(t, apierrors.IsNotFound(err), "outside the scope: %v", err)
	_, err = pods.Lister().Namespace("c").Get("p3")
	assert.True(t, apierrors.IsNotFound(err), "outside the scope: %v", err)
	inB, err := pods.Lister().Namespace("b").List(nil)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"b/p2", "b/p4"}, keysOf(inB))
	inC, err := pods.Lister().Namespace("c").List(nil)
	require.NoError(t, err)
	assert.Empty(t, inC)
	owned, err := pods.ByControllerUID("rs-uid")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a/p1", "b/p2"}, keysOf(owned), "indexes span the namespaces")
	require.NoError(t, pods.AddIndex("by-name", func(p *corev1.Pod) ([]string, error) { return []string{p.Name}, nil }))
	byName, err := pods.ByIndex("by-name", "p4")
	require.NoError(t, err)
	assert.Equal(t, []string{"b/p4"}, keysOf(byName), "an index added after start covers every namespace")

	// The escape hatch is the same cache.
	raw := pods.Informer()
	assert.True(t, raw.HasSynced())
	_, exists, err := raw.GetIndexer().GetByKey("a/p1")
	require.NoError(t, err)
	assert.True(t, exists)
	_, exists, err = raw.GetIndexer().GetByKey("c/p3")
	require.NoError(t, err)
	assert.False(t, exists)
	assert.Len(t, raw.GetStore().ListKeys(), 3)
	assert.Contains(t, raw.GetIndexer().GetIndexers(), "by-name")

	initial := log.take(t, 3)
	var initialKeys []string
	for _, e := range initial {
		assert.Equal(t, "add", e.op)
		assert.True(t, e.initial)
		initialKeys = append(initialKeys, e.key)
	}
	assert.ElementsMatch(t, []string{"a/p1", "b/p2", "b/p4"}, initialKeys)

	// Events of each namespace reach the handler; another namespace's do not.
	_, err = client.CoreV1().Pods("c").Create(ctx, pod("c", "new", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = client.CoreV1().Pods("a").Create(ctx, pod("a", "new", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, event{op: "add", key: "a/new"}, log.next(t))
	require.NoError(t, client.CoreV1().Pods("b").Delete(ctx, "p4", metav1.DeleteOptions{}))
	// A Pod is deleted gracefully, as on kube-apiserver: marked (an update), then gone.
	assert.Equal(t, event{op: "update", key: "b/p4"}, log.next(t))
	assert.Equal(t, event{op: "delete", key: "b/p4"}, log.next(t))
	require.NoError(t, client.CoreV1().Pods("c").Delete(ctx, "p3", metav1.DeleteOptions{}))
	p2, err := client.CoreV1().Pods("b").Get(ctx, "p2", metav1.GetOptions{})
	require.NoError(t, err)
	p2.Labels = map[string]string{"touched": "yes"}
	_, err = client.CoreV1().Pods("b").Update(ctx, p2, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, event{op: "update", key: "b/p2"}, log.next(t))
	log.none(t)

	require.NoError(t, pods.RemoveHandler(reg))
	_, err = client.CoreV1().Pods("a").Create(ctx, pod("a", "after-remove", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := pods.Lister().Get("a", "after-remove")
		return err == nil
	}, 10*time.Second, time.Millisecond)
	log.none(t)
	other, err := For[*corev1.ConfigMap](f)
	require.NoError(t, err)
	otherReg, err := other.AddHandler(HandlerFuncs[*corev1.ConfigMap]{})
	require.NoError(t, err)
	assert.ErrorContains(t, pods.RemoveHandler(otherReg), "was not returned by this informer")
}

func TestScopeLabelSelector(t *testing.T) {
	ctx := context.Background()
	client, f := scopedCluster(t,
		cm("a", "web", map[string]string{"app": "web"}), cm("a", "db", map[string]string{"app": "db"}), cm("b", "web2", map[string]string{"app": "web"}))
	cms, err := For(f, WithLabelSelector[*corev1.ConfigMap]("app=web"))
	require.NoError(t, err)
	log := newEventLog[*corev1.ConfigMap]()
	_, err = cms.AddHandler(log)
	require.NoError(t, err)
	startFactory(t, f)

	all, err := cms.Lister().List(nil)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a/web", "b/web2"}, keysOf(all))
	_, err = cms.Lister().Get("a", "db")
	assert.True(t, apierrors.IsNotFound(err))
	log.take(t, 2)

	// Relabelled out of the selector: a delete, as from an API server.
	web, err := client.CoreV1().ConfigMaps("a").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	web.Labels["app"] = "other"
	_, err = client.CoreV1().ConfigMaps("a").Update(ctx, web, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, event{op: "delete", key: "a/web"}, log.next(t))
	_, err = cms.Lister().Get("a", "web")
	assert.True(t, apierrors.IsNotFound(err))

	// Relabelled in: an add.
	db, err := client.CoreV1().ConfigMaps("a").Get(ctx, "db", metav1.GetOptions{})
	require.NoError(t, err)
	db.Labels["app"] = "web"
	_, err = client.CoreV1().ConfigMaps("a").Update(ctx, db, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, event{op: "add", key: "a/db"}, log.next(t))
	log.none(t)
}

func TestScopeFieldSelectorAndNamespace(t *testing.T) {
	ctx := context.Background()
	onNode := func(ns, name, node string) *corev1.Pod {
		p := pod(ns, name, map[string]string{"app": "web"})
		p.Spec.NodeName = node
		return p
	}
	client, f := scopedCluster(t, onNode("a", "p1", "n1"), onNode("a", "p2", "n2"), onNode("b", "p3", "n1"))
	pods, err := For(f, InNamespaces[*corev1.Pod]("a"), WithFieldSelector[*corev1.Pod]("spec.nodeName=n1"), WithLabelSelector[*corev1.Pod]("app"))
	require.NoError(t, err)
	log := newEventLog[*corev1.Pod]()
	_, err = pods.AddHandler(log)
	require.NoError(t, err)
	startFactory(t, f)
	all, err := pods.Lister().List(nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"a/p1"}, keysOf(all))
	assert.Equal(t, event{op: "add", key: "a/p1", initial: true}, log.next(t))

	_, err = client.CoreV1().Pods("a").Create(ctx, onNode("a", "p4", "n1"), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, event{op: "add", key: "a/p4"}, log.next(t))
	require.NoError(t, client.CoreV1().Pods("a").Delete(ctx, "p1", metav1.DeleteOptions{}))
	assert.Equal(t, event{op: "update", key: "a/p1"}, log.next(t), "marked for graceful deletion")
	assert.Equal(t, event{op: "delete", key: "a/p1"}, log.next(t))
	log.none(t)
}

func TestScopeSharingAndConflicts(t *testing.T) {
	_, f := scopedCluster(t)
	t.Cleanup(f.Shutdown)
	first, err := For(f, InNamespaces[*corev1.Pod]("b", "a"), WithLabelSelector[*corev1.Pod]("tier=web,app=shop"))
	require.NoError(t, err)
	again, err := For(f, WithLabelSelector[*corev1.Pod]("app=shop, tier=web"), InNamespaces[*corev1.Pod]("a", "b", "a"))
	require.NoError(t, err)
	assert.Same(t, first, again, "an equal scope shares the informer")

	_, err = For(f, InNamespaces[*corev1.Pod]("a"))
	require.ErrorAs(t, err, new(*ScopeConflictError))
	var conflict *ScopeConflictError
	require.ErrorAs(t, err, &conflict)
	assert.Equal(t, "pods", conflict.Informer)
	assert.Contains(t, err.Error(), `namespaces a,b, labels "app=shop,tier=web"`)
	assert.Contains(t, err.Error(), "{namespaces a}")

	_, err = For[*corev1.Pod](f)
	require.ErrorAs(t, err, new(*ScopeConflictError), "no options is a scope too")
	assert.Contains(t, err.Error(), "the factory's namespaces")

	// And the other way round.
	_, err = For[*corev1.ConfigMap](f)
	require.NoError(t, err)
	_, err = For(f, WithFieldSelector[*corev1.ConfigMap]("metadata.name=x"))
	require.ErrorAs(t, err, new(*ScopeConflictError))
}

func TestScopeBadOptions(t *testing.T) {
	_, f := scopedCluster(t)
	t.Cleanup(f.Shutdown)
	for _, tc := range []struct {
		name string
		opt  ScopeOption[*corev1.Pod]
		want string
	}{
		{"label selector", WithLabelSelector[*corev1.Pod]("app in (web"), `WithLabelSelector("app in (web")`},
		{"field selector", WithFieldSelector[*corev1.Pod]("spec.nodeName"), `WithFieldSelector("spec.nodeName")`},
		{"no namespace", InNamespaces[*corev1.Pod](), "InNamespaces: no namespace given"},
		{"empty namespace", InNamespaces[*corev1.Pod]("a", ""), "InNamespaces: empty namespace name"},
		{"invalid namespace", InNamespaces[*corev1.Pod]("Not_A_Namespace"), `InNamespaces: invalid namespace "Not_A_Namespace"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := For(f, tc.opt)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "informer for *k8s.io/api/core/v1.Pod: "+tc.want)
		})
	}
	// Nothing was registered by the failures.
	pods, err := For(f, InNamespaces[*corev1.Pod]("ok"))
	require.NoError(t, err)
	assert.NotNil(t, pods)

	c, err := fakecluster.New()
	require.NoError(t, err)
	limited := NewFactory(c.Clientset(), Options{Namespace: "a"})
	t.Cleanup(limited.Shutdown)
	_, err = For(limited, InNamespaces[*corev1.Pod]("a", "b"))
	require.ErrorContains(t, err, `the factory watches only namespace "a"`)
	inA, err := For(limited, InNamespaces[*corev1.Pod]("a"))
	require.NoError(t, err)
	assert.NotNil(t, inA)
}

// A scoped informer requested after Start starts at once and is waited for.
func TestScopedInformerAfterStart(t *testing.T) {
	_, f := scopedCluster(t, cm("a", "x", nil), cm("b", "y", nil), cm("c", "z", nil))
	startFactory(t, f)
	cms, err := For(f, InNamespaces[*corev1.ConfigMap]("a", "c"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, f.WaitForCacheSync(ctx))
	all, err := cms.Lister().List(nil)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a/x", "c/z"}, keysOf(all))
}

// A cluster-scoped type cannot be narrowed to namespaces: it is reported.
func TestScopeNamespacesOfClusterScopedType(t *testing.T) {
	c, err := fakecluster.New(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	require.NoError(t, err)
	var sink errorSink
	f := NewFactory(c.Clientset(), Options{ErrorHandler: sink.handle})
	_, err = For(f, InNamespaces[*corev1.Node]("a"))
	require.NoError(t, err)
	startFactory(t, f)
	require.Eventually(t, func() bool { return len(sink.all()) > 0 }, 10*time.Second, time.Millisecond)
	assert.ErrorContains(t, sink.all()[0], "is the resource cluster-scoped?")
}

func TestScopedForResource(t *testing.T) {
	labelled := func(ns, name, app string) *unstructured.Unstructured {
		u := unstructuredWidget(ns, name, int64(1))
		unstructured.RemoveNestedField(u.Object, "metadata", "resourceVersion")
		u.SetLabels(map[string]string{"app": app})
		return u
	}
	c, err := fakecluster.NewWithOptions(fakecluster.Options{
		Resources: []fakecluster.Resource{{GVR: widgetsGVR, Kind: "Widget", Namespaced: true}},
		Objects:   []runtime.Object{labelled("a", "w1", "x"), labelled("b", "w2", "x"), labelled("b", "w3", "y"), labelled("c", "w4", "x")},
	})
	require.NoError(t, err)
	f := NewFactory(nil, Options{
		DynamicClient:    c.Dynamic(),
		MutationDetector: true,
		MutationReport:   func(err error) { t.Errorf("%v", err) },
	})
	widgets, err := ForResource(f, widgetsGVR, InNamespaces[*widget]("a", "b"), WithLabelSelector[*widget]("app=x"))
	require.NoError(t, err)
	again, err := ForResource(f, widgetsGVR, WithLabelSelector[*widget]("app=x"), InNamespaces[*widget]("b", "a"))
	require.NoError(t, err)
	assert.Same(t, widgets, again)
	_, err = ForResource[*widget](f, widgetsGVR)
	require.ErrorAs(t, err, new(*ScopeConflictError))
	_, err = ForResource(f, widgetsGVR, WithFieldSelector[*widget]("spec.size"))
	require.ErrorContains(t, err, "WithFieldSelector")
	startFactory(t, f)

	all, err := widgets.Lister().List(nil)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a/w1", "b/w2"}, keysOf(all))
	assert.Equal(t, 1, all[0].Spec.Size, "converted to the Go type")
	_, err = widgets.Lister().Get("c", "w4")
	assert.True(t, apierrors.IsNotFound(err))
}

func TestScopedForMetadata(t *testing.T) {
	scheme := metadatafake.NewTestScheme()
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	meta := metadatafake.NewSimpleMetadataClient(scheme,
		partialSecret("a", "s1", true), partialSecret("b", "s2", false), partialSecret("c", "s3", false))
	f := NewFactory(newClient(), Options{MetadataClient: meta})
	secrets, err := ForMetadata(f, secretsGVR, InNamespaces[*metav1.PartialObjectMetadata]("a", "b"))
	require.NoError(t, err)
	_, err = ForMetadata(f, secretsGVR)
	require.ErrorAs(t, err, new(*ScopeConflictError))
	startFactory(t, f)
	all, err := secrets.Lister().List(nil)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a/s1", "b/s2"}, keysOf(all))
	s1, err := secrets.Lister().Get("a", "s1")
	require.NoError(t, err)
	assert.Nil(t, s1.ManagedFields, "the factory transform runs on scoped metadata informers")
	_, err = secrets.Lister().Get("c", "s3")
	assert.True(t, apierrors.IsNotFound(err))
}

// A delete missed while a namespace's watch was down reaches the handler of
// a multi-namespace informer as a tombstone, from that namespace's relist.
func TestScopeNamespacesTombstone(t *testing.T) {
	client := newClient(pod("a", "p1", nil), pod("b", "p2", nil))
	watchers := make(chan *watch.FakeWatcher, 10)
	client.PrependWatchReactor("pods", func(action k8stesting.Action) (bool, watch.Interface, error) {
		w := watch.NewFakeWithChanSize(10, false)
		if action.GetNamespace() == "a" {
			watchers <- w
		}
		return true, w, nil
	})
	f := NewFactory(client, Options{})
	pods, err := For(f, InNamespaces[*corev1.Pod]("a", "b"))
	require.NoError(t, err)
	log := newEventLog[*corev1.Pod]()
	_, err = pods.AddHandler(log)
	require.NoError(t, err)
	startFactory(t, f)
	log.take(t, 2)
	var first *watch.FakeWatcher
	select {
	case first = <-watchers:
	case <-time.After(10 * time.Second):
		t.Fatal("namespace a was not watched")
	}

	// Deleted behind the watch's back, then the watch expires: the relist
	// finds the Pod gone.
	require.NoError(t, client.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "a", "p1"))
	first.Error(&metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired, Message: "too old"})
	assert.Equal(t, event{op: "delete", key: "a/p1", tombstone: true}, log.next(t))
	_, err = pods.Lister().Get("a", "p1")
	assert.True(t, apierrors.IsNotFound(err))
	still, err := pods.Lister().Get("b", "p2")
	require.NoError(t, err)
	assert.Equal(t, "p2", still.Name)
}
