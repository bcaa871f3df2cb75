package testkit_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

func configMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func TestNewFakeSeedsClientAndInformers(t *testing.T) {
	env := testkit.NewFake(t,
		configMap("a", "one"), configMap("a", "two"), configMap("b", "three"),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p"}},
	)
	require.Nil(t, env.Config(), "a fake has no server")
	require.Equal(t, metav1.NamespaceDefault, env.Namespace())

	got, err := env.Client().CoreV1().ConfigMaps("a").Get(env.Context(), "two", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "two", got.Name)

	// Requested after NewFake: the started factory starts it at once; Sync waits for it.
	cms, err := informer.For[*corev1.ConfigMap](env.Factory())
	require.NoError(t, err)
	env.Sync()
	require.True(t, cms.HasSynced())
	listed, err := cms.Lister().List(labels.Everything())
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"one", "two", "three"}, names(listed))

	// Writes after the sync reach the cache through the watch.
	_, err = env.Client().CoreV1().ConfigMaps("b").Create(env.Context(), configMap("b", "four"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := cms.Lister().Get("b", "four")
		return err == nil
	}, 10*time.Second, 5*time.Millisecond)
}

func names[T metav1.Object](objs []T) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return out
}

// fatalTB records Fatal instead of failing the real test, so a test can check that misuse is
// reported. Fatal must stop the caller, so it ends the goroutine as testing.T does.
type fatalTB struct {
	testing.TB
	mu     sync.Mutex
	fatals []string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.fatals = append(f.fatals, fmt.Sprintf(format, args...))
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fatalTB) Fatal(args ...any) { f.Fatalf("%s", fmt.Sprint(args...)) }

// fatalOf runs fn with a fatalTB and returns the first Fatal message ("" when none).
func fatalOf(t *testing.T, fn func(tb testing.TB)) string {
	t.Helper()
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(tb)
	}()
	<-done
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if len(tb.fatals) == 0 {
		return ""
	}
	return tb.fatals[0]
}

func TestNewFakeRejectsBadSeeds(t *testing.T) {
	msg := fatalOf(t, func(tb testing.TB) { testkit.NewFake(tb, configMap("a", "x"), configMap("a", "x")) })
	assert.Contains(t, msg, "ConfigMap a/x")
	assert.Contains(t, msg, "already exists")

	msg = fatalOf(t, func(tb testing.TB) { testkit.NewFake(tb, nil) })
	assert.Contains(t, msg, "seed object 0 is nil")

	msg = fatalOf(t, func(tb testing.TB) {
		testkit.NewFakeWithOptions(tb, testkit.FakeOptions{
			Resources: []fakecluster.Resource{{GVR: schema.GroupVersionResource{Group: "x.io", Version: "v1", Resource: "widgets"}, Kind: "WidgetList"}},
		})
	})
	assert.Contains(t, msg, "Resources[0]")
	assert.Contains(t, msg, `kind "WidgetList" must be the object kind`)
}

func TestFaultHelpersRejectBadInput(t *testing.T) {
	assert.Empty(t, fatalOf(t, func(tb testing.TB) { testkit.NewFake(tb).FailWrites(10) }))
	assert.Contains(t, fatalOf(t, func(tb testing.TB) { testkit.NewFake(tb).FailWrites(101) }), "outside 0..100")
	assert.Contains(t, fatalOf(t, func(tb testing.TB) { testkit.NewFake(tb).FailWrites(-1) }), "outside 0..100")
	assert.Contains(t, fatalOf(t, func(tb testing.TB) { testkit.NewFake(tb).Delay(-time.Second) }), "negative latency")
}

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

func widget(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Widget")
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func TestNewFakeServesTypedAndCustomResourcesFromOneStore(t *testing.T) {
	gadgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	env := testkit.NewFakeWithOptions(t, testkit.FakeOptions{
		Objects:   []k8sruntime.Object{widget("a", "w1"), widget("a", "w2"), configMap("a", "cm")},
		Resources: []fakecluster.Resource{{GVR: gadgets, Kind: "Gadget", Namespaced: true}},
	})
	list, err := env.Dynamic().Resource(widgets).Namespace("a").List(env.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 2)
	assert.NotEmpty(t, list.Items[0].GetUID(), "custom resources are stamped like built-in ones")

	// A declared resource lists empty before any object of it exists.
	list, err = env.Dynamic().Resource(gadgets).List(env.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, list.Items)

	// An undeclared one is a clear error, not a panic.
	_, err = env.Dynamic().Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gizmos"}).
		List(env.Context(), metav1.ListOptions{})
	require.ErrorIs(t, err, fakecluster.ErrUndeclaredResource)
	require.ErrorContains(t, err, "gizmos.example.com/v1")
	require.ErrorContains(t, err, "testkit.FakeOptions.Resources")

	// Typed seeds are visible through both clients.
	_, err = env.Client().CoreV1().ConfigMaps("a").Get(env.Context(), "cm", metav1.GetOptions{})
	require.NoError(t, err)
	u, err := env.Dynamic().Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("a").
		Get(env.Context(), "cm", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "ConfigMap", u.GetKind())
	require.NotNil(t, env.Cluster())
	require.Same(t, env.Cluster().Clientset(), env.Client())
}

// FailWrites, Delay and Actions cover the dynamic client (custom resources) as they cover the
// typed one: both send their requests through one reaction chain.
func TestFaultsAndActionsApplyToDynamicRequests(t *testing.T) {
	env := testkit.NewFakeWithOptions(t, testkit.FakeOptions{Objects: []k8sruntime.Object{widget("a", "seed")}})
	res := env.Dynamic().Resource(widgets).Namespace("a")
	env.ClearActions()

	env.FailWrites(100, "create")
	_, err := res.Create(env.Context(), widget("a", "w"), metav1.CreateOptions{})
	require.ErrorIs(t, err, testkit.ErrInjected)
	require.Contains(t, err.Error(), "failure of create widgets.example.com")
	require.Equal(t, 1, env.Injected())
	env.FailWrites(0)
	created, err := res.Create(env.Context(), widget("a", "w"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, created.GetResourceVersion())

	const d = 30 * time.Millisecond
	env.Delay(d)
	begin := time.Now()
	_, err = res.Get(env.Context(), "w", metav1.GetOptions{})
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(begin), d)
	env.Delay(0)

	var verbs []string
	for _, a := range env.Actions() {
		if a.GetResource() == widgets {
			verbs = append(verbs, a.GetVerb())
		}
	}
	require.Equal(t, []string{"create", "create", "get"}, verbs)
}

// createMany creates n ConfigMaps and returns which attempts failed and with what.
func createMany(t *testing.T, env *testkit.FakeEnv, n int) (failed []int, errs []error) {
	t.Helper()
	for i := range n {
		_, err := env.Client().CoreV1().ConfigMaps("a").Create(env.Context(), configMap("a", fmt.Sprintf("cm-%d", i)), metav1.CreateOptions{})
		if err != nil {
			failed = append(failed, i)
			errs = append(errs, err)
		}
	}
	return failed, errs
}

func TestFailWritesIsDeterministicAndNearThePercentage(t *testing.T) {
	const n, percent = 300, 30
	run := func(seed uint64) ([]int, []error, *testkit.FakeEnv) {
		env := testkit.NewFakeWithOptions(t, testkit.FakeOptions{Seed: seed})
		env.FailWrites(percent)
		failed, errs := createMany(t, env, n)
		require.Equal(t, len(failed), env.Injected())
		return failed, errs, env
	}
	first, errs, _ := run(7)
	again, _, _ := run(7)
	other, _, _ := run(8)

	require.Equal(t, first, again, "the same seed fails the same requests")
	require.NotEqual(t, first, other, "another seed fails other requests")
	// Binomial(300, 0.3) has a standard deviation of 7.9; ±40 is five of them (and the seed is
	// fixed, so this never flakes: it checks the draw is not skewed).
	require.InDelta(t, n*percent/100, len(first), 40)

	for _, err := range errs {
		require.ErrorIs(t, err, testkit.ErrInjected)
		require.True(t, apierrors.IsInternalError(err), "injected errors look like a server's: %v", err)
		require.Contains(t, err.Error(), "failure of create configmaps")
	}
}

func TestFailWritesHonoursVerbsAndCanBeTurnedOff(t *testing.T) {
	env := testkit.NewFake(t, configMap("a", "keep"))
	cms := env.Client().CoreV1().ConfigMaps("a")

	env.FailWrites(100, "delete")
	_, err := cms.Create(env.Context(), configMap("a", "new"), metav1.CreateOptions{})
	require.NoError(t, err, "create is not among the failing verbs")
	_, err = cms.Get(env.Context(), "keep", metav1.GetOptions{})
	require.NoError(t, err, "reads never fail")
	err = cms.Delete(env.Context(), "keep", metav1.DeleteOptions{})
	require.ErrorIs(t, err, testkit.ErrInjected)
	require.Contains(t, err.Error(), "failure of delete configmaps keep")

	env.FailWrites(100) // the default verbs replace "delete"
	_, err = cms.Update(env.Context(), configMap("a", "keep"), metav1.UpdateOptions{})
	require.ErrorIs(t, err, testkit.ErrInjected)

	env.FailWrites(0)
	require.NoError(t, cms.Delete(env.Context(), "keep", metav1.DeleteOptions{}))
	require.Equal(t, 2, env.Injected())

	// Failed requests are still recorded: a test can see that a controller tried.
	var deletes int
	for _, a := range env.Actions() {
		if a.GetVerb() == "delete" && a.GetResource().Resource == "configmaps" {
			deletes++
		}
	}
	require.Equal(t, 2, deletes)
}

func TestDelayAddsLatencyToEveryRequest(t *testing.T) {
	env := testkit.NewFake(t, configMap("a", "x"))
	const d = 30 * time.Millisecond
	env.Delay(d)
	for _, req := range []func() error{
		func() error {
			_, err := env.Client().CoreV1().ConfigMaps("a").Get(env.Context(), "x", metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := env.Client().CoreV1().ConfigMaps("a").List(env.Context(), metav1.ListOptions{})
			return err
		},
		func() error {
			w, err := env.Client().CoreV1().ConfigMaps("a").Watch(env.Context(), metav1.ListOptions{})
			if err == nil {
				w.Stop()
			}
			return err
		},
	} {
		begin := time.Now()
		require.NoError(t, req())
		// A lower bound only: the delay is a floor, never a ceiling, so this cannot flake.
		require.GreaterOrEqual(t, time.Since(begin), d)
	}
}

func TestDelayGivesUpWhenTheTestEnds(t *testing.T) {
	var env *testkit.FakeEnv
	t.Run("inner", func(t *testing.T) {
		env = testkit.NewFake(t)
		env.Delay(time.Hour)
		// A request started now would wait an hour; the inner test's end must release it.
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = env.Client().CoreV1().ConfigMaps("a").Get(context.Background(), "x", metav1.GetOptions{})
		}()
		t.Cleanup(func() { <-done })
	})
}

func TestActionsRecordAndClear(t *testing.T) {
	env := testkit.NewFake(t)
	env.ClearActions() // informer lists and watches from the start
	_, err := env.Client().CoreV1().ConfigMaps("a").Create(env.Context(), configMap("a", "x"), metav1.CreateOptions{})
	require.NoError(t, err)
	acts := env.Actions()
	require.Len(t, acts, 1)
	require.Equal(t, "create", acts[0].GetVerb())
	require.Equal(t, "configmaps", acts[0].GetResource().Resource)
	env.ClearActions()
	require.Empty(t, env.Actions())
}

func TestErrInjectedMessage(t *testing.T) {
	// The sentinel is lower-case and names nothing but itself; wrapped errors add the culprit.
	require.Equal(t, "injected failure", testkit.ErrInjected.Error())
	require.False(t, errors.Is(apierrors.NewInternalError(errors.New("x")), testkit.ErrInjected))
}

// An update that kept its resourceVersion looks like a resync, which handlers that skip resyncs
// drop; NewFake's API-server semantics give every write a new resourceVersion (and seed objects
// a UID), so handlers see every update.
func TestNewFakeStampsWritesAndDeliversUpdates(t *testing.T) {
	env := testkit.NewFake(t, configMap("default", "seed"))
	inf, err := informer.For[*corev1.ConfigMap](env.Factory())
	require.NoError(t, err)
	updates := make(chan *corev1.ConfigMap, 10)
	_, err = inf.AddHandler(informer.HandlerFuncs[*corev1.ConfigMap]{
		OnUpdate:   func(_, cm *corev1.ConfigMap) { updates <- cm },
		SkipResync: true,
	})
	require.NoError(t, err)
	env.Sync()

	seed, err := inf.Lister().Get("default", "seed")
	require.NoError(t, err)
	assert.NotEmpty(t, seed.UID, "seed objects are stamped as if created")
	require.NotEmpty(t, seed.ResourceVersion)
	for i := range 3 {
		cm := seed.DeepCopy()
		cm.Data = map[string]string{"v": fmt.Sprint(i)}
		cm.ResourceVersion = "" // an unconditional update, as many controllers send
		_, err = env.Client().CoreV1().ConfigMaps("default").Update(env.Context(), cm, metav1.UpdateOptions{})
		require.NoError(t, err)
		select {
		case got := <-updates:
			assert.Equal(t, fmt.Sprint(i), got.Data["v"])
			assert.NotEqual(t, seed.ResourceVersion, got.ResourceVersion, "every write gets a new resourceVersion")
			seed = got
		case <-time.After(10 * time.Second):
			t.Fatalf("update %d never reached the handler", i)
		}
	}
	// A stale resourceVersion is a Conflict, as on an API server.
	stale := seed.DeepCopy()
	stale.ResourceVersion = "1"
	_, err = env.Client().CoreV1().ConfigMaps("default").Update(env.Context(), stale, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsConflict(err), "got %v", err)
}
