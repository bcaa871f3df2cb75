package informer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// handlerView is what a handler believes the cache holds: adds put, deletes
// (real or out of scope) take away. Namespaces' informers call it at once.
type handlerView struct {
	mu   sync.Mutex
	keys map[string]bool
	bad  []string
}

func (v *handlerView) HandleAdd(p *corev1.Pod, _ bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.keys[objectKey(p)] = true
}

func (v *handlerView) HandleUpdate(_, p *corev1.Pod) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.keys[objectKey(p)] = true
}

func (v *handlerView) HandleDelete(p *corev1.Pod, info DeleteInfo) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !info.OutOfScope {
		v.bad = append(v.bad, "a real delete of "+info.Key) // nothing is deleted in this test
	}
	delete(v.keys, objectKey(p))
}

func (v *handlerView) list() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for k := range v.keys {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Random sequences of Add, Remove and Set: once the informer has synced,
// its lister, a handler registered from the start and a handler registered
// midway all hold exactly the Pods of the set's namespaces, and reads in the
// other namespaces fail with ErrNamespaceNotWatched.
func TestInNamespaceSetModel(t *testing.T) {
	namespaces := []string{"n0", "n1", "n2", "n3", "n4"}
	var objs []runtime.Object
	for i, ns := range namespaces {
		for j := range i + 1 { // n0 has one Pod, n4 five
			objs = append(objs, pod(ns, fmt.Sprintf("p%d", j), nil))
		}
	}
	c, err := fakecluster.New(objs...)
	require.NoError(t, err)
	f := NewFactory(c.Clientset(), Options{MutationDetector: true, MutationReport: func(err error) { t.Errorf("%v", err) }})
	set := newSet(t)
	pods, err := For(f, InNamespaceSet[*corev1.Pod](set))
	require.NoError(t, err)
	early := &handlerView{keys: map[string]bool{}}
	_, err = pods.AddHandler(early)
	require.NoError(t, err)
	startFactory(t, f)

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	model := map[string]bool{}
	var late *handlerView
	for step := range 40 {
		// Several changes in a row, so that the informer sees them coalesced too.
		for range 1 + rng.IntN(3) {
			ns := namespaces[rng.IntN(len(namespaces))]
			switch rng.IntN(3) {
			case 0:
				require.NoError(t, set.Add(ns))
				model[ns] = true
			case 1:
				set.Remove(ns)
				delete(model, ns)
			default:
				var pick []string
				clear(model)
				for _, ns := range namespaces {
					if rng.IntN(2) == 0 {
						pick = append(pick, ns)
						model[ns] = true
					}
				}
				require.NoError(t, set.Set(pick...))
			}
		}
		if step == 20 {
			late = &handlerView{keys: map[string]bool{}}
			_, err = pods.AddHandler(late)
			require.NoError(t, err)
		}
		want := []string{}
		for _, ns := range namespaces {
			if !model[ns] {
				continue
			}
			for j := range slices.Index(namespaces, ns) + 1 {
				want = append(want, ns+"/p"+fmt.Sprint(j))
			}
		}
		slices.Sort(want)
		waitSynced(t, f)
		all, err := pods.Lister().List(nil)
		require.NoError(t, err)
		got := keysOf(all)
		slices.Sort(got)
		require.Equal(t, want, got, "step %d, set %v", step, set.List())
		for _, ns := range namespaces {
			_, err := pods.Lister().Get(ns, "p0")
			if model[ns] {
				require.NoError(t, err, "step %d: %s", step, ns)
			} else {
				require.ErrorIs(t, err, ErrNamespaceNotWatched, "step %d: %s", step, ns)
			}
		}
		// Handlers get their events after the cache changed: poll.
		for _, v := range []*handlerView{early, late} {
			if v == nil {
				continue
			}
			require.NoError(t, wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				return slices.Equal(want, v.list()), nil
			}), "step %d: handler holds %v, want %v", step, v.list(), want)
		}
	}
	assert.Empty(t, early.bad)
	assert.Empty(t, late.bad)
}

func TestNamespacesMatching(t *testing.T) {
	ctx := context.Background()
	watched := map[string]string{"watch": "true"}
	nsObj := func(name string, lbls map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
	}
	c, err := fakecluster.New(nsObj("a", watched), nsObj("b", nil), cm("a", "x", nil), cm("b", "y", nil))
	require.NoError(t, err)
	client := c.Clientset()
	f := NewFactory(client, Options{})

	_, err = NamespacesMatching(f, "watch in (true")
	require.ErrorContains(t, err, `NamespacesMatching("watch in (true")`)
	set, err := NamespacesMatching(f, "watch=true")
	require.NoError(t, err)
	again, err := NamespacesMatching(f, "watch = true")
	require.NoError(t, err, "the same selector shares the Namespace informer")
	assert.NotSame(t, set, again)
	_, err = For[*corev1.Namespace](f)
	require.ErrorAs(t, err, new(*ScopeConflictError))
	_, err = NamespacesMatching(f, "other=true")
	require.ErrorAs(t, err, new(*ScopeConflictError))

	cms, err := For(f, InNamespaceSet[*corev1.ConfigMap](set))
	require.NoError(t, err)
	startFactory(t, f)
	assert.Equal(t, []string{"a"}, set.List(), "filled before the informer synced")
	_, err = cms.Lister().Get("a", "x")
	require.NoError(t, err)
	_, err = cms.Lister().Get("b", "y")
	require.ErrorIs(t, err, ErrNamespaceNotWatched)

	relabel := func(name string, lbls map[string]string) {
		t.Helper()
		ns, err := client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		ns.Labels = lbls
		_, err = client.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	relabel("b", watched)
	require.Eventually(t, func() bool { return set.Has("b") }, 10*time.Second, time.Millisecond)
	waitSynced(t, f)
	_, err = cms.Lister().Get("b", "y")
	require.NoError(t, err)

	relabel("a", map[string]string{"watch": "false"})
	require.Eventually(t, func() bool { return !set.Has("a") }, 10*time.Second, time.Millisecond)
	waitSynced(t, f)
	_, err = cms.Lister().Get("a", "x")
	require.ErrorIs(t, err, ErrNamespaceNotWatched)
	assert.Equal(t, []string{"b"}, again.List(), "both sets follow")

	// A namespace being deleted leaves the set.
	require.NoError(t, client.CoreV1().Namespaces().Delete(ctx, "b", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return !set.Has("b") }, 10*time.Second, time.Millisecond)
}

// A namespace being deleted (deletionTimestamp set, a finalizer holding it)
// leaves the set at once, before it is gone.
func TestNamespacesMatchingDeleting(t *testing.T) {
	ctx := context.Background()
	held := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a", Finalizers: []string{"ctrlkit.dev/hold"}}}
	c, err := fakecluster.New(held)
	require.NoError(t, err)
	f := NewFactory(c.Clientset(), Options{})
	set, err := NamespacesMatching(f, "")
	require.NoError(t, err)
	_, err = For[*corev1.Namespace](f)
	require.NoError(t, err, "the empty selector is the factory's unscoped Namespace informer")
	startFactory(t, f)
	require.Eventually(t, func() bool { return set.Has("a") }, 10*time.Second, time.Millisecond)

	require.NoError(t, c.Clientset().CoreV1().Namespaces().Delete(ctx, "a", metav1.DeleteOptions{}))
	ns, err := c.Clientset().CoreV1().Namespaces().Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err, "held by its finalizer")
	require.NotNil(t, ns.DeletionTimestamp)
	require.Eventually(t, func() bool { return !set.Has("a") }, 10*time.Second, time.Millisecond)
}
