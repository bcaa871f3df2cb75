package informer

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// logLines collects what a factory logs.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(_, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, args)
}

func (l *logLines) matching(substr string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return out
}

// watchSignal makes client's watches of resource register with its tracker in the reactor, and
// returns a channel closed once the first is registered: from then on no event is lost.
func watchSignal(client *fake.Clientset, resource string) <-chan struct{} {
	watching := make(chan struct{})
	var once sync.Once
	client.PrependWatchReactor(resource, func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(a.GetResource(), a.GetNamespace())
		once.Do(func() { close(watching) })
		return true, w, err
	})
	return watching
}

func TestMemoryBudgetFailsReadinessWhileOver(t *testing.T) {
	client := newClient(uidPod("a", "web-1"), uidPod("a", "web-2"))
	watching := watchSignal(client, "pods")
	f := NewFactory(client, Options{
		MemoryBudget: 1 << 30,
		BudgetPolicy: BudgetFailReadiness,
		ByObject:     []ObjectOverride{ByObject(ObjectOptions[*corev1.Pod]{MemoryBudget: 1000, BudgetPolicy: BudgetFailReadiness})},
	})
	_, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	require.True(t, hasReadinessBudget(f))
	startFactory(t, f)
	waitMemory(t, f, func(m CacheMemory) bool { return m.Informers[0].Objects == 2 })

	err = f.CheckMemoryBudget()
	var be *BudgetError
	require.ErrorAs(t, err, &be)
	require.Equal(t, "pods", be.Informer, "only the Pods' budget is exceeded, not the factory's")
	require.Equal(t, int64(1000), be.Budget)
	require.Greater(t, be.Used, int64(1000))
	require.Contains(t, err.Error(), "the cache of informer pods holds about")

	// Below the budget once the objects are gone: their own bytes at once, the shared
	// sub-objects they brought once the GC has freed them (a cleanup uncharges them), which
	// an idle test process may not do by itself for a long while. The deletes wait for the
	// informer's watch: the fake clientset drops events sent before a watch exists.
	<-watching
	for _, name := range []string{"web-1", "web-2"} {
		require.NoError(t, client.CoreV1().Pods("a").Delete(context.Background(), name, metav1.DeleteOptions{}))
	}
	require.NoError(t, wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) {
			runtime.GC()
			return f.CheckMemoryBudget() == nil, nil
		}))
}

func TestMemoryBudgetDegradesToMetadataOnly(t *testing.T) {
	var logs logLines
	client := newClient(uidPod("a", "web-1"))
	watching := watchSignal(client, "pods")
	f := NewFactory(client, Options{
		Logger:              funcr.New(logs.add, funcr.Options{}),
		MemoryBudget:        100,
		BudgetPolicy:        BudgetDegrade,
		BudgetCheckInterval: 5 * time.Millisecond,
		ByObject:            []ObjectOverride{ByObject(ObjectOptions[*corev1.Pod]{Degradable: true})},
	})
	pods, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	require.False(t, hasReadinessBudget(f), "no budget fails readiness")
	startFactory(t, f)
	require.NoError(t, f.CheckMemoryBudget(), "a degrade budget does not fail readiness")

	waitMemory(t, f, func(m CacheMemory) bool { return m.Informers[0].Degraded })
	require.NotEmpty(t, logs.matching("over their memory budget"))
	require.NotEmpty(t, logs.matching("degraded to metadata only"))

	// Objects entering the cache from now on keep their metadata only.
	p := uidPod("a", "web-2")
	<-watching // the fake clientset drops events sent before a watch exists
	_, err = client.CoreV1().Pods("a").Create(context.Background(), p, metav1.CreateOptions{})
	require.NoError(t, err)
	var cached *corev1.Pod
	require.NoError(t, wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) {
			cached, err = pods.Lister().Get("a", "web-2")
			return err == nil, nil
		}))
	require.Equal(t, p.Labels, cached.Labels)
	require.Equal(t, p.UID, cached.UID)
	require.Empty(t, cached.Spec.Containers, "the spec is dropped")
}

// The sharing table's admission filter is allocated with the factory, whatever it caches: a
// small budget is not spent by it (a 100Ki budget failed readiness with two Pods cached).
func TestMemoryBudgetDoesNotChargeTheTablesFixedBytes(t *testing.T) {
	client := newClient(uidPod("a", "web-1"), uidPod("a", "web-2"))
	f := NewFactory(client, Options{MemoryBudget: 100 << 10, BudgetPolicy: BudgetFailReadiness})
	_, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	startFactory(t, f)
	waitMemory(t, f, func(m CacheMemory) bool { return m.Informers[0].Objects == 2 })
	mem := f.CacheMemory()
	require.Greater(t, mem.Bytes, int64(100<<10), "CacheMemory reports the filter")
	require.NoError(t, f.CheckMemoryBudget(), "the budget does not charge it")

	f = NewFactory(client, Options{MemoryBudget: mem.Bytes - f.table.FixedBytes() - 1, BudgetPolicy: BudgetFailReadiness})
	_, err = For[*corev1.Pod](f)
	require.NoError(t, err)
	startFactory(t, f)
	waitMemory(t, f, func(m CacheMemory) bool { return len(m.Informers) == 1 && m.Informers[0].Objects == 2 })
	require.ErrorAs(t, f.CheckMemoryBudget(), new(*BudgetError), "the caches themselves are charged")
}

// The degrade policy with no informer marked degradable says so, where the budget is set and
// when it is crossed, instead of doing nothing in silence.
func TestMemoryBudgetDegradeWithoutDegradableInformerSaysSo(t *testing.T) {
	var logs logLines
	f := NewFactory(newClient(uidPod("a", "web-1")), Options{
		Logger:              funcr.New(logs.add, funcr.Options{}),
		MemoryBudget:        100,
		BudgetPolicy:        BudgetDegrade,
		BudgetCheckInterval: 5 * time.Millisecond,
	})
	require.Len(t, logs.matching("has no degradable informer"), 1)
	_, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	startFactory(t, f)
	require.NoError(t, wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) {
			return len(logs.matching("found no degradable informer")) > 0, nil
		}))
	require.False(t, f.CacheMemory().Informers[0].Degraded)
}

func TestMemoryBudgetConfigErrorsAreReported(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{MemoryBudget: -1, BudgetPolicy: BudgetWarn}, "Options.MemoryBudget: budget -1 is not positive"},
		{Options{MemoryBudget: 10, BudgetPolicy: BudgetPolicy(9)}, "Options.MemoryBudget: unknown policy BudgetPolicy(9)"},
		{Options{MemoryBudget: 10}, "Options.MemoryBudget: budget 10 set without a BudgetPolicy"},
		{Options{BudgetPolicy: BudgetWarn}, "Options.MemoryBudget: BudgetPolicy warn set without a budget"},
		{Options{ByObject: []ObjectOverride{ByObject(ObjectOptions[*corev1.Pod]{BudgetPolicy: BudgetDegrade})}},
			"ByObject[*k8s.io/api/core/v1.Pod] MemoryBudget: BudgetPolicy degrade set without a budget"},
	} {
		var sink errorSink
		tc.opts.ErrorHandler = sink.handle
		f := NewFactory(newClient(), tc.opts)
		require.Len(t, sink.all(), 1, tc.want)
		require.Contains(t, sink.all()[0].Error(), tc.want)
		require.NoError(t, f.CheckMemoryBudget())
		require.False(t, hasReadinessBudget(f))
	}

	var off errorSink
	NewFactory(newClient(), Options{
		ErrorHandler:      off.handle,
		DisableAccounting: true,
		ByObject:          []ObjectOverride{ByObject(ObjectOptions[*corev1.Pod]{MemoryBudget: 10, BudgetPolicy: BudgetWarn})},
	})
	require.Len(t, off.all(), 1)
	require.Contains(t, off.all()[0].Error(), "ByObject[*k8s.io/api/core/v1.Pod] MemoryBudget ignored: the factory has DisableAccounting")
}

func TestUnscopedHighCardinalityInformerWarnsOnce(t *testing.T) {
	var logs logLines
	f := NewFactory(newClient(), Options{Logger: funcr.New(logs.add, funcr.Options{})})
	_, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	_, err = For[*corev1.Pod](f)
	require.NoError(t, err)
	_, err = For[*corev1.Service](f)
	require.NoError(t, err)
	_, err = For[*corev1.Secret](f, InNamespaces[*corev1.Secret]("a"))
	require.NoError(t, err)
	warned := logs.matching("high-cardinality")
	require.Len(t, warned, 1, "once, for the Pods: %v", logs.lines)
	require.Contains(t, warned[0], `"informer"="pods"`)

	scoped := NewFactory(newClient(), Options{Namespace: "a", Logger: funcr.New(logs.add, funcr.Options{})})
	_, err = For[*corev1.ConfigMap](scoped)
	require.NoError(t, err)
	require.Len(t, logs.matching("high-cardinality"), 1, "a factory of one namespace is scoped")
}

func TestMetadataOnly(t *testing.T) {
	p := uidPod("a", "web")
	p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	out := metadataOnly(p).(*corev1.Pod)
	require.Equal(t, p.ObjectMeta, out.ObjectMeta)
	require.Equal(t, p.TypeMeta, out.TypeMeta)
	require.Empty(t, out.Spec.Containers)
	require.NotEmpty(t, p.Spec.Containers, "the original is left alone")
	meta := &metav1.PartialObjectMetadata{ObjectMeta: p.ObjectMeta}
	require.Same(t, meta, metadataOnly(meta), "nothing to drop")
}

// hasReadinessBudget is how a Manager tells whether to check the factory's
// budgets on /readyz.
func hasReadinessBudget(f *Factory) bool {
	for _, b := range f.MemoryBudgets() {
		if b.Policy == BudgetFailReadiness {
			return true
		}
	}
	return false
}
