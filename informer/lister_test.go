package informer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

func names[T Object](objs []T) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, objectKey(o))
	}
	sort.Strings(out)
	return out
}

// Listers and indexes answer what the API holds: a random population of
// pods across namespaces, labels and owners, compared after sync with the
// clientset's own List.
func TestListersAndIndexesMatchTheAPI(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	namespaces := []string{"a", "b", "c"}
	owners := []string{"", "rs-1", "rs-2", "rs-3"}
	var objs []runtime.Object
	for i := range 200 {
		ns := namespaces[rng.IntN(len(namespaces))]
		app := fmt.Sprintf("app-%d", rng.IntN(4))
		p := pod(ns, fmt.Sprintf("p-%d", i), map[string]string{"app": app})
		if o := owners[rng.IntN(len(owners))]; o != "" {
			p.OwnerReferences = []metav1.OwnerReference{controllerRef("apps/v1", "ReplicaSet", o, "uid-"+o)}
		}
		objs = append(objs, p)
	}
	client := newClient(objs...)
	f := NewFactory(client, Options{})
	pods, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	require.NoError(t, pods.AddIndex("app", func(p *corev1.Pod) ([]string, error) {
		return []string{p.Labels["app"]}, nil
	}))
	startFactory(t, f)

	apiPods, err := client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	want := func(keep func(corev1.Pod) bool) []string {
		var out []string
		for _, p := range apiPods.Items {
			if keep(p) {
				out = append(out, p.Namespace+"/"+p.Name)
			}
		}
		sort.Strings(out)
		return out
	}

	all, err := pods.Lister().List(labels.Everything())
	require.NoError(t, err)
	assert.Equal(t, want(func(corev1.Pod) bool { return true }), names(all))

	sel := labels.SelectorFromSet(labels.Set{"app": "app-1"})
	matched, err := pods.Lister().List(sel)
	require.NoError(t, err)
	assert.Equal(t, want(func(p corev1.Pod) bool { return p.Labels["app"] == "app-1" }), names(matched))

	for _, ns := range namespaces {
		inNS, err := pods.Lister().Namespace(ns).List(nil)
		require.NoError(t, err)
		assert.Equal(t, want(func(p corev1.Pod) bool { return p.Namespace == ns }), names(inNS), ns)
		inNSSel, err := pods.Lister().Namespace(ns).List(sel)
		require.NoError(t, err)
		assert.Equal(t, want(func(p corev1.Pod) bool { return p.Namespace == ns && p.Labels["app"] == "app-1" }), names(inNSSel))
		byIdx, err := pods.ByIndex(indexNamespace, ns)
		require.NoError(t, err)
		assert.Equal(t, names(inNS), names(byIdx))
	}
	everywhere, err := pods.Lister().Namespace(metav1.NamespaceAll).List(nil)
	require.NoError(t, err)
	assert.Len(t, everywhere, len(apiPods.Items))

	for _, o := range owners[1:] {
		children, err := pods.ByControllerUID(types.UID("uid-" + o))
		require.NoError(t, err)
		assert.Equal(t, want(func(p corev1.Pod) bool {
			ref := metav1.GetControllerOf(&p)
			return ref != nil && ref.Name == o
		}), names(children), o)
	}

	byApp, err := pods.ByIndex("app", "app-2")
	require.NoError(t, err)
	assert.Equal(t, want(func(p corev1.Pod) bool { return p.Labels["app"] == "app-2" }), names(byApp))

	for _, p := range apiPods.Items[:10] {
		got, err := pods.Lister().Get(p.Namespace, p.Name)
		require.NoError(t, err)
		assert.Equal(t, p.UID, got.UID)
		got, err = pods.Lister().Namespace(p.Namespace).Get(p.Name)
		require.NoError(t, err)
		assert.Equal(t, p.UID, got.UID)
	}
}

func TestListerNotFound(t *testing.T) {
	f := NewFactory(newClient(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}), Options{})
	pods, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	nodes, err := For[*corev1.Node](f)
	require.NoError(t, err)
	startFactory(t, f)

	_, err = pods.Lister().Get("a", "missing")
	require.True(t, apierrors.IsNotFound(err), err)
	var status apierrors.APIStatus
	require.True(t, errors.As(err, &status))
	assert.Equal(t, "missing", status.Status().Details.Name)
	assert.Equal(t, "pods", status.Status().Details.Kind)
	assert.Equal(t, "", status.Status().Details.Group)
	assert.Equal(t, `pods "missing" not found`, err.Error())

	_, err = pods.Lister().Namespace("a").Get("missing")
	require.True(t, apierrors.IsNotFound(err))

	// Cluster-scoped: Get("", name).
	n, err := nodes.Lister().Get("", "n1")
	require.NoError(t, err)
	assert.Equal(t, "n1", n.Name)
	_, err = nodes.Lister().Get("", "n2")
	require.True(t, apierrors.IsNotFound(err))
}

func TestReplicaSetNotFoundNamesItsGroup(t *testing.T) {
	f := NewFactory(newClient(), Options{})
	rs, err := For[*appsv1.ReplicaSet](f)
	require.NoError(t, err)
	startFactory(t, f)
	_, err = rs.Lister().Get("a", "x")
	var status apierrors.APIStatus
	require.True(t, errors.As(err, &status))
	assert.Equal(t, "apps", status.Status().Details.Group)
	assert.Equal(t, "replicasets", status.Status().Details.Kind)
}

// Indexes can be added before and after start, twice without error, and see
// objects that were cached before they existed.
func TestAddIndexBeforeAndAfterStart(t *testing.T) {
	ctx := context.Background()
	client := newClient(pod("a", "p1", map[string]string{"tier": "web"}), pod("b", "p2", map[string]string{"tier": "db"}))
	f := NewFactory(client, Options{})
	pods, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	byTier := func(p *corev1.Pod) ([]string, error) { return []string{p.Labels["tier"]}, nil }
	require.NoError(t, pods.AddIndex("tier", byTier))
	require.NoError(t, pods.AddIndex("tier", byTier), "the same index twice is fine")
	require.NoError(t, pods.AddIndex(indexNamespace, byTier), "built-in names too")
	require.Error(t, pods.AddIndex("", byTier))
	require.Error(t, pods.AddIndex("nil", nil))
	startFactory(t, f)

	web, err := pods.ByIndex("tier", "web")
	require.NoError(t, err)
	assert.Equal(t, []string{"a/p1"}, names(web))

	// After start: existing objects are indexed at once, new ones as they come.
	require.NoError(t, pods.AddIndex("name-length", func(p *corev1.Pod) ([]string, error) {
		return []string{fmt.Sprint(len(p.Name))}, nil
	}))
	two, err := pods.ByIndex("name-length", "2")
	require.NoError(t, err)
	assert.Equal(t, []string{"a/p1", "b/p2"}, names(two))
	_, err = client.CoreV1().Pods("c").Create(ctx, pod("c", "p3", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		two, err := pods.ByIndex("name-length", "2")
		return err == nil && slices.Equal(names(two), []string{"a/p1", "b/p2", "c/p3"})
	}, 10*time.Second, 10*time.Millisecond)

	_, err = pods.ByIndex("no-such-index", "x")
	require.ErrorContains(t, err, "informer pods")
}

// An index function that fails is reported and leaves the object out of
// that index; client-go alone would panic inside the informer.
func TestFailingIndexFunctionIsReported(t *testing.T) {
	sink := &errorSink{}
	f := NewFactory(newClient(pod("a", "bad", nil), pod("a", "good", nil)), Options{ErrorHandler: sink.handle})
	pods, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	require.NoError(t, pods.AddIndex("picky", func(p *corev1.Pod) ([]string, error) {
		if p.Name == "bad" {
			return nil, errors.New("cannot index this one")
		}
		return []string{"ok"}, nil
	}))
	startFactory(t, f)
	ok, err := pods.ByIndex("picky", "ok")
	require.NoError(t, err)
	assert.Equal(t, []string{"a/good"}, names(ok))
	errs := sink.all()
	require.NotEmpty(t, errs)
	assert.ErrorContains(t, errs[0], `index "picky" for a/bad: cannot index this one`)
}
