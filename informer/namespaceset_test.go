package informer

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

func newSet(t *testing.T, namespaces ...string) *NamespaceSet {
	t.Helper()
	s, err := NewNamespaceSet(namespaces...)
	require.NoError(t, err)
	return s
}

// waitSynced waits until every informer of f has synced (a namespace added
// to a set makes its informer unsynced until it has listed).
func waitSynced(t *testing.T, f *Factory) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, f.WaitForCacheSync(ctx))
}

func TestNamespaceSetMethods(t *testing.T) {
	_, err := NewNamespaceSet("a", "")
	require.ErrorContains(t, err, "empty namespace name")
	_, err = NewNamespaceSet("Not_A_Namespace")
	require.ErrorContains(t, err, `invalid namespace "Not_A_Namespace"`)

	s := newSet(t, "b", "a", "b")
	assert.Equal(t, []string{"a", "b"}, s.List())
	assert.Equal(t, "{a,b}", s.String())
	gen := s.generation()
	require.Error(t, s.Set("c", "-bad-"))
	assert.Equal(t, []string{"a", "b"}, s.List(), "a refused Set changes nothing")
	require.NoError(t, s.Set("b", "a"))
	assert.Equal(t, gen, s.generation(), "the same namespaces are no change")
	require.NoError(t, s.Add("c"))
	require.NoError(t, s.Add("c"))
	require.ErrorContains(t, s.Add(""), "NamespaceSet.Add: empty namespace name")
	assert.True(t, s.Has("c"))
	s.Remove("a")
	s.Remove("zzz")
	assert.False(t, s.Has("a"))
	assert.Equal(t, []string{"b", "c"}, s.List())
	assert.Equal(t, gen+2, s.generation())
	require.NoError(t, s.Set())
	assert.Empty(t, s.List())

	empty := newSet(t)
	assert.Empty(t, empty.List())
}

func TestInNamespaceSetScope(t *testing.T) {
	_, f := scopedCluster(t)
	t.Cleanup(f.Shutdown)
	set := newSet(t, "b", "a")
	first, err := For(f, InNamespaceSet[*corev1.Pod](set))
	require.NoError(t, err)
	again, err := For(f, InNamespaceSet[*corev1.Pod](set))
	require.NoError(t, err)
	assert.Same(t, first, again, "the same set shares the informer")

	_, err = For(f, InNamespaceSet[*corev1.Pod](newSet(t, "a", "b")))
	require.ErrorAs(t, err, new(*ScopeConflictError), "another set with the same names is another scope")
	assert.Contains(t, err.Error(), "{namespaces of set {a,b}}")
	_, err = For(f, InNamespaces[*corev1.Pod]("a", "b"))
	require.ErrorAs(t, err, new(*ScopeConflictError))
	_, err = For(f, InNamespaceSet[*corev1.Pod](set), InNamespaces[*corev1.Pod]("a", "b"))
	require.ErrorAs(t, err, new(*ScopeConflictError), "the later option wins: a fixed scope")
	_, err = For(f, InNamespaceSet[*corev1.ConfigMap](nil))
	require.ErrorContains(t, err, "InNamespaceSet: nil set")

	c, err := fakecluster.New()
	require.NoError(t, err)
	limited := NewFactory(c.Clientset(), Options{Namespace: "a"})
	t.Cleanup(limited.Shutdown)
	_, err = For(limited, InNamespaceSet[*corev1.Pod](set))
	require.ErrorContains(t, err, `InNamespaceSet: the factory watches only namespace "a"`)
}

// The journey of one informer through its set's changes.
func TestInNamespaceSetFollowsTheSet(t *testing.T) {
	ctx := context.Background()
	owner := controllerRef("apps/v1", "ReplicaSet", "rs", "rs-uid")
	client, f := scopedCluster(t, pod("a", "p1", nil, owner), pod("b", "p2", nil, owner), pod("c", "p3", nil))
	set := newSet(t, "a")
	pods, err := For(f, InNamespaceSet[*corev1.Pod](set))
	require.NoError(t, err)
	require.NoError(t, pods.AddIndex("by-name", func(p *corev1.Pod) ([]string, error) { return []string{p.Name}, nil }))
	log := newEventLog[*corev1.Pod]()
	reg, err := pods.AddHandler(log)
	require.NoError(t, err)
	startFactory(t, f)
	assert.Equal(t, event{op: "add", key: "a/p1", initial: true}, log.next(t))
	require.Eventually(t, reg.HasSynced, 10*time.Second, time.Millisecond)

	// Added: listed, replayed to the handler as an initial list, indexed.
	require.NoError(t, set.Add("b"))
	assert.Equal(t, event{op: "add", key: "b/p2", initial: true}, log.next(t))
	waitSynced(t, f)
	require.Eventually(t, reg.HasSynced, 10*time.Second, time.Millisecond)
	got, err := pods.Lister().Get("b", "p2")
	require.NoError(t, err)
	assert.Equal(t, "p2", got.Name)
	byName, err := pods.ByIndex("by-name", "p2")
	require.NoError(t, err)
	assert.Equal(t, []string{"b/p2"}, keysOf(byName), "indexes added before reach a namespace added later")
	owned, err := pods.ByControllerUID("rs-uid")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a/p1", "b/p2"}, keysOf(owned))
	_, err = client.CoreV1().Pods("b").Create(ctx, pod("b", "live", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, event{op: "add", key: "b/live"}, log.next(t), "the new namespace is watched")

	// Removed: its objects leave as out of scope, the lister refuses it.
	set.Remove("a")
	assert.Equal(t, event{op: "delete", key: "a/p1", outOfScope: true}, log.next(t))
	waitSynced(t, f)
	_, err = pods.Lister().Get("a", "p1")
	require.ErrorIs(t, err, ErrNamespaceNotWatched)
	assert.False(t, apierrors.IsNotFound(err), "not watched is not deleted")
	assert.Contains(t, err.Error(), `informer pods: namespace "a" is not watched`)
	_, err = pods.Lister().Namespace("a").List(nil)
	require.ErrorIs(t, err, ErrNamespaceNotWatched)
	_, err = pods.Lister().Get("c", "p3")
	require.ErrorIs(t, err, ErrNamespaceNotWatched, "never in the set")
	_, err = pods.Lister().Get("b", "gone")
	assert.True(t, apierrors.IsNotFound(err), "absent in a watched namespace: NotFound")
	all, err := pods.Lister().List(nil)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"b/p2", "b/live"}, keysOf(all))
	_, err = client.CoreV1().Pods("a").Create(ctx, pod("a", "unseen", nil), metav1.CreateOptions{})
	require.NoError(t, err)

	// Re-added: replayed again, with what changed meanwhile.
	require.NoError(t, set.Add("a"))
	replay := log.take(t, 2)
	assert.ElementsMatch(t, []event{{op: "add", key: "a/p1", initial: true}, {op: "add", key: "a/unseen", initial: true}}, replay)
	waitSynced(t, f)

	// A handler added now sees the current namespaces only.
	late := newEventLog[*corev1.Pod]()
	lateReg, err := pods.AddHandler(late)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a/p1", "a/unseen", "b/p2", "b/live"}, keysOf(addsOf(t, late, 4)))
	require.Eventually(t, lateReg.HasSynced, 10*time.Second, time.Millisecond)

	// Set replaces: a and b leave, c comes.
	require.NoError(t, set.Set("c"))
	out := log.take(t, 5)
	var gone, came []string
	for _, e := range out {
		if e.op == "delete" {
			assert.True(t, e.outOfScope, "%+v", e)
			gone = append(gone, e.key)
		} else {
			assert.Equal(t, "add", e.op)
			came = append(came, e.key)
		}
	}
	assert.ElementsMatch(t, []string{"a/p1", "a/unseen", "b/p2", "b/live"}, gone)
	assert.Equal(t, []string{"c/p3"}, came)
	require.NoError(t, pods.RemoveHandler(lateReg))
	require.NoError(t, pods.RemoveHandler(reg))
	other, err := For[*corev1.ConfigMap](f)
	require.NoError(t, err)
	otherReg, err := other.AddHandler(HandlerFuncs[*corev1.ConfigMap]{})
	require.NoError(t, err)
	assert.ErrorContains(t, pods.RemoveHandler(otherReg), "was not returned by this informer")
	log.none(t)
}

// addsOf takes n events, all adds of the initial list, and returns their objects' keys as pods.
func addsOf(t *testing.T, l *eventLog[*corev1.Pod], n int) []*corev1.Pod {
	t.Helper()
	var out []*corev1.Pod
	for _, e := range l.take(t, n) {
		require.Equal(t, "add", e.op, "%+v", e)
		require.True(t, e.initial, "%+v", e)
		ns, name, err := cache.SplitMetaNamespaceKey(e.key)
		require.NoError(t, err)
		out = append(out, pod(ns, name, nil))
	}
	return out
}

// HandlerFuncs sends real deletes to OnDelete and the others to OnOutOfScope.
func TestHandlerFuncsOutOfScope(t *testing.T) {
	var deleted, left []string
	h := HandlerFuncs[*corev1.Pod]{
		OnDelete:     func(p *corev1.Pod) { deleted = append(deleted, p.Name) },
		OnOutOfScope: func(p *corev1.Pod) { left = append(left, p.Name) },
	}
	h.HandleDelete(pod("a", "real", nil), DeleteInfo{Key: "a/real"})
	h.HandleDelete(pod("a", "left", nil), DeleteInfo{Key: "a/left", OutOfScope: true})
	HandlerFuncs[*corev1.Pod]{OnDelete: h.OnDelete}.HandleDelete(pod("a", "left2", nil), DeleteInfo{OutOfScope: true})
	assert.Equal(t, []string{"real"}, deleted)
	assert.Equal(t, []string{"left"}, left)

	var q recorder[string]
	m := EnqueueMapped(&q, func(p *corev1.Pod) []string { return []string{p.Name} })
	m.HandleDelete(pod("a", "left", nil), DeleteInfo{OutOfScope: true})
	m.HandleDelete(pod("a", "real", nil), DeleteInfo{})
	assert.Equal(t, []string{"real"}, q.got())
}

// A namespace whose list is refused (RBAC not granted yet) keeps the
// informer and its handlers unsynced, until the list succeeds.
func TestInNamespaceSetListRefused(t *testing.T) {
	client := newClient(pod("a", "p1", nil), pod("locked", "p2", nil))
	var granted atomic.Bool
	refuse := func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetNamespace() != "locked" || granted.Load() {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC: not yet"))
	}
	client.PrependReactor("list", "pods", refuse)
	client.PrependWatchReactor("pods", func(action k8stesting.Action) (bool, watch.Interface, error) {
		handled, _, err := refuse(action)
		return handled, nil, err
	})
	var sink errorSink
	f := NewFactory(client, Options{ErrorHandler: sink.handle})
	set := newSet(t, "a")
	pods, err := For(f, InNamespaceSet[*corev1.Pod](set))
	require.NoError(t, err)
	reg, err := pods.AddHandler(HandlerFuncs[*corev1.Pod]{})
	require.NoError(t, err)
	startFactory(t, f)
	require.Eventually(t, reg.HasSynced, 10*time.Second, time.Millisecond)

	require.NoError(t, set.Add("locked"))
	require.Eventually(t, func() bool {
		_, err := pods.Lister().Namespace("locked").List(nil)
		return err == nil // applied
	}, 10*time.Second, time.Millisecond)
	assert.False(t, pods.HasSynced())
	assert.False(t, reg.HasSynced())
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = f.WaitForCacheSync(ctx)
	require.ErrorIs(t, err, ErrCacheSyncTimeout)
	assert.Contains(t, err.Error(), "pods")
	got, err := pods.Lister().Get("a", "p1")
	require.NoError(t, err, "the other namespaces are served meanwhile")
	assert.Equal(t, "p1", got.Name)

	granted.Store(true)
	waitSynced(t, f)
	assert.True(t, pods.HasSynced())
	require.Eventually(t, reg.HasSynced, 10*time.Second, time.Millisecond)
	_, err = pods.Lister().Get("locked", "p2")
	require.NoError(t, err)
}

// An empty set watches nothing and has synced; a change after Shutdown does nothing.
func TestInNamespaceSetEmptyAndAfterShutdown(t *testing.T) {
	_, f := scopedCluster(t, cm("a", "x", nil))
	set := newSet(t)
	cms, err := For(f, InNamespaceSet[*corev1.ConfigMap](set))
	require.NoError(t, err)
	reg, err := cms.AddHandler(HandlerFuncs[*corev1.ConfigMap]{})
	require.NoError(t, err)
	startFactory(t, f)
	assert.True(t, cms.HasSynced())
	require.Eventually(t, reg.HasSynced, 10*time.Second, time.Millisecond)
	all, err := cms.Lister().List(nil)
	require.NoError(t, err)
	assert.Empty(t, all)
	assert.Contains(t, cms.Informer().GetIndexer().GetIndexers(), indexControllerUID)

	require.NoError(t, set.Add("a"))
	waitSynced(t, f)
	got, err := cms.Lister().Get("a", "x")
	require.NoError(t, err)
	assert.Equal(t, "x", got.Name)

	f.Shutdown()
	assert.True(t, cms.Informer().IsStopped())
	set.Remove("a")
	require.NoError(t, set.Add("b"))
	_, err = cms.Lister().Get("a", "x")
	require.NoError(t, err, "the cache is kept as it was at Shutdown")
	_, err = cms.Lister().Get("b", "x")
	require.ErrorIs(t, err, ErrNamespaceNotWatched)
	set.mu.Lock()
	assert.Empty(t, set.subs, "Shutdown dropped the subscription")
	set.mu.Unlock()

	// An informer asked for after Shutdown runs nothing.
	late, err := For(f, InNamespaceSet[*corev1.Secret](set))
	require.NoError(t, err)
	require.NoError(t, set.Add("c"))
	assert.NotNil(t, late)
}

func TestInNamespaceSetForResourceAndMetadata(t *testing.T) {
	w1, w2 := unstructuredWidget("a", "w1", int64(1)), unstructuredWidget("b", "w2", int64(2))
	w1.SetResourceVersion("")
	w2.SetResourceVersion("")
	c, err := fakecluster.NewWithOptions(fakecluster.Options{
		Resources: []fakecluster.Resource{{GVR: widgetsGVR, Kind: "Widget", Namespaced: true}},
		Objects:   []runtime.Object{w1, w2},
	})
	require.NoError(t, err)
	scheme := metadatafake.NewTestScheme()
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	meta := metadatafake.NewSimpleMetadataClient(scheme, partialSecret("a", "s1", true), partialSecret("b", "s2", false))
	f := NewFactory(nil, Options{DynamicClient: c.Dynamic(), MetadataClient: meta})
	set := newSet(t, "a")
	widgets, err := ForResource(f, widgetsGVR, InNamespaceSet[*widget](set))
	require.NoError(t, err)
	secrets, err := ForMetadata(f, secretsGVR, InNamespaceSet[*metav1.PartialObjectMetadata](set))
	require.NoError(t, err)
	startFactory(t, f)
	w, err := widgets.Lister().Get("a", "w1")
	require.NoError(t, err)
	assert.Equal(t, 1, w.Spec.Size, "converted to the Go type")
	_, err = widgets.Lister().Get("b", "w2")
	require.ErrorIs(t, err, ErrNamespaceNotWatched)

	require.NoError(t, set.Set("b"))
	waitSynced(t, f)
	w, err = widgets.Lister().Get("b", "w2")
	require.NoError(t, err)
	assert.Equal(t, 2, w.Spec.Size)
	s2, err := secrets.Lister().Get("b", "s2")
	require.NoError(t, err)
	assert.Equal(t, "s2", s2.Name)
	_, err = secrets.Lister().Get("a", "s1")
	require.ErrorIs(t, err, ErrNamespaceNotWatched)
}

// Handlers registered through the client-go escape hatch get a tombstone for
// an object whose namespace left; what cannot follow the set is refused.
func TestInNamespaceSetEscapeHatch(t *testing.T) {
	_, f := scopedCluster(t, cm("a", "x", nil))
	set := newSet(t, "a")
	cms, err := For(f, InNamespaceSet[*corev1.ConfigMap](set))
	require.NoError(t, err)
	raw := cms.Informer()
	deletes := make(chan any, 10)
	_, err = raw.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) { deletes <- obj }})
	require.NoError(t, err)
	require.ErrorContains(t, raw.SetTransform(nil), "not supported for an informer following a NamespaceSet")
	require.Error(t, raw.SetWatchErrorHandler(nil))
	require.Error(t, raw.SetWatchErrorHandlerWithContext(nil))
	require.Error(t, raw.AddIndexers(cache.Indexers{indexControllerUID: nil}), "an index name taken")
	startFactory(t, f)
	assert.False(t, raw.IsStopped())

	set.Remove("a")
	select {
	case obj := <-deletes:
		tomb, ok := obj.(cache.DeletedFinalStateUnknown)
		require.True(t, ok, "%T", obj)
		assert.Equal(t, "a/x", tomb.Key)
		assert.Equal(t, "x", tomb.Obj.(*corev1.ConfigMap).Name)
	case <-time.After(10 * time.Second):
		t.Fatal("no delete")
	}
}
