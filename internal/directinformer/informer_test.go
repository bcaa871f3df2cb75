package directinformer

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
	testingclock "k8s.io/utils/clock/testing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func pod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

// recorder is a handler that writes down what it was told, one line per
// call, and fails the test if two calls overlap.
type recorder struct {
	t       *testing.T
	mu      sync.Mutex
	inCall  bool
	lines   []string
	onEvent func(line string) // called outside mu, on the calling goroutine
}

func describe(obj any) string {
	switch o := obj.(type) {
	case *corev1.Pod:
		return o.Name + "@" + o.Annotations["v"]
	case cache.DeletedFinalStateUnknown:
		return "tombstone(" + o.Key + ")"
	}
	return fmt.Sprintf("%T", obj)
}

func (r *recorder) record(line string) {
	r.mu.Lock()
	if r.inCall {
		r.t.Errorf("two calls of one handler at once (%s)", line)
	}
	r.inCall = true
	r.lines = append(r.lines, line)
	r.mu.Unlock()
	if r.onEvent != nil {
		r.onEvent(line)
	}
	r.mu.Lock()
	r.inCall = false
	r.mu.Unlock()
}

func (r *recorder) OnAdd(obj any, initial bool) {
	r.record(fmt.Sprintf("add %s initial=%t", describe(obj), initial))
}
func (r *recorder) OnUpdate(old, obj any) {
	r.record(fmt.Sprintf("update %s -> %s", describe(old), describe(obj)))
}
func (r *recorder) OnDelete(obj any) { r.record("delete " + describe(obj)) }

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

// versioned is a pod whose annotation v tells its version in the test's
// terms (the fake source sets resourceVersion itself).
func versioned(name, v string) *corev1.Pod {
	p := pod(name, "")
	p.Annotations = map[string]string{"v": v}
	return p
}

// run starts inf and returns a stop that waits for it.
func run(t *testing.T, inf *Informer) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	return stop
}

func eventually(t *testing.T, r *recorder, want []string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, want, r.seen())
	}, 10*time.Second, time.Millisecond)
}

// newSource is a fake list and watch holding objs; it shuts down after the
// informers run stopped (cleanups run last in, first out).
func newSource(t *testing.T, objs ...*corev1.Pod) *fcache.FakeControllerSource {
	src := fcache.NewFakeControllerSource()
	t.Cleanup(src.Shutdown)
	for _, o := range objs {
		src.Add(o)
	}
	return src
}

func TestHandlersSeeChangesInOrder(t *testing.T) {
	src := newSource(t, versioned("a", "1"))
	inf := New(Options{ListerWatcher: src, ObjectType: &corev1.Pod{}, Name: "pods"})
	r := &recorder{t: t}
	reg, err := inf.AddEventHandler(r)
	require.NoError(t, err)
	run(t, inf)
	require.True(t, cache.WaitForCacheSync(t.Context().Done(), reg.HasSynced))
	assert.True(t, inf.HasSynced())
	select {
	case <-inf.HasSyncedChecker().Done():
	default:
		t.Fatal("the informer's checker is not done after it synced")
	}
	assert.Equal(t, []string{"add a@1 initial=true"}, r.seen(), "the handler has synced once it saw the list")

	src.Modify(versioned("a", "2"))
	src.Add(versioned("b", "1"))
	src.Delete(versioned("a", "3"))
	eventually(t, r, []string{
		"add a@1 initial=true",
		"update a@1 -> a@2",
		"add b@1 initial=false",
		"delete a@3",
	})
	_, exists, _ := inf.GetStore().GetByKey("ns/a")
	assert.False(t, exists)
	assert.NotEmpty(t, inf.LastSyncResourceVersion())
}

// scripted is a ListerWatcher whose lists the test sets and whose watches it
// drives.
type scripted struct {
	mu       sync.Mutex
	list     *corev1.PodList
	watchers chan *watch.FakeWatcher
}

func newScripted(rv string, pods ...*corev1.Pod) *scripted {
	s := &scripted{watchers: make(chan *watch.FakeWatcher, 10)}
	s.setList(rv, pods...)
	return s
}

func (s *scripted) setList(rv string, pods ...*corev1.Pod) {
	l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
	for _, p := range pods {
		l.Items = append(l.Items, *p)
	}
	s.mu.Lock()
	s.list = l
	s.mu.Unlock()
}

func (s *scripted) List(metav1.ListOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.list.DeepCopy(), nil
}

// IsWatchListSemanticsUnSupported makes the reflector list, then watch.
func (s *scripted) IsWatchListSemanticsUnSupported() bool { return true }

func (s *scripted) Watch(metav1.ListOptions) (watch.Interface, error) {
	w := watch.NewFakeWithOptions(watch.FakeOptions{ChannelSize: 10})
	s.watchers <- w
	return w, nil
}

// at is p with resourceVersion rv.
func at(p *corev1.Pod, rv string) *corev1.Pod {
	p.ResourceVersion = rv
	return p
}

// A delete the watch missed is found by the next list: the handler gets a
// tombstone with the last cached state; a change it missed arrives as an
// update, and so does an object the list finds as it was.
func TestRelistTombstonesWhatTheWatchMissed(t *testing.T) {
	src := newScripted("10", at(versioned("a", "1"), "5"), at(versioned("b", "1"), "6"), at(versioned("c", "1"), "7"))
	inf := New(Options{ListerWatcher: src, ObjectType: &corev1.Pod{}, Name: "pods"})
	r := &recorder{t: t}
	_, err := inf.AddEventHandler(r)
	require.NoError(t, err)
	run(t, inf)
	initial := []string{"add a@1 initial=true", "add b@1 initial=true", "add c@1 initial=true"}
	eventually(t, r, initial)

	w := <-src.watchers
	src.setList("20", at(versioned("a", "2"), "15"), at(versioned("c", "1"), "7"))
	w.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old"})
	eventually(t, r, append(initial,
		"delete tombstone(ns/b)",
		"update a@1 -> a@2",
		"update c@1 -> c@1",
	))
	assert.Equal(t, "20", inf.LastSyncResourceVersion())
}

// A handler added while changes flow gets the cache as adds, then every
// change after it, in order: replaying what it was told ends in the cache's
// state.
func TestLateHandlerJoinsWithoutLosingOrRepeating(t *testing.T) {
	src := newSource(t)
	for n := range 50 {
		src.Add(versioned("p"+strconv.Itoa(n), "0"))
	}
	inf := New(Options{ListerWatcher: src, ObjectType: &corev1.Pod{}, Name: "pods"})
	run(t, inf)
	require.True(t, cache.WaitForCacheSync(t.Context().Done(), inf.HasSynced))

	const rounds = 20
	writer := make(chan struct{})
	go func() {
		defer close(writer)
		for v := 1; v <= rounds; v++ {
			for n := range 50 {
				src.Modify(versioned("p"+strconv.Itoa(n), strconv.Itoa(v)))
			}
		}
	}()
	late := &recorder{t: t}
	reg, err := inf.AddEventHandler(late)
	require.NoError(t, err)
	assert.True(t, reg.HasSynced(), "a handler joining a synced informer has synced when it returns")
	<-writer

	want := map[string]string{}
	for n := range 50 {
		want["p"+strconv.Itoa(n)] = strconv.Itoa(rounds)
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		state := map[string]string{} // what the late handler was told, by name
		for _, line := range late.seen() {
			var obj, from string
			var initial bool
			if _, err := fmt.Sscanf(line, "add %s initial=%t", &obj, &initial); err == nil {
				name, v := splitVersion(obj)
				if !assert.NotContains(c, state, name, "added twice: %s", line) {
					return
				}
				state[name] = v
				continue
			}
			if _, err := fmt.Sscanf(line, "update %s -> %s", &from, &obj); err == nil {
				name, was := splitVersion(from)
				_, v := splitVersion(obj)
				if !assert.Equal(c, state[name], was, "an update from a state it was not told: %s", line) {
					return
				}
				old, _ := strconv.Atoi(was)
				now, _ := strconv.Atoi(v)
				if !assert.GreaterOrEqual(c, now, old, "went back in time: %s", line) {
					return
				}
				state[name] = v
				continue
			}
			assert.Fail(c, "unexpected call", line)
			return
		}
		assert.Equal(c, want, state)
	}, 10*time.Second, time.Millisecond)
}

func splitVersion(s string) (name, version string) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '@' {
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

// Handlers may add and remove handlers of the informer they are called by:
// nothing they do waits for the goroutine that is calling them.
func TestHandlerAddsAndRemovesHandlersFromWithin(t *testing.T) {
	src := newSource(t, versioned("a", "1"))
	inf := New(Options{ListerWatcher: src, ObjectType: &corev1.Pod{}, Name: "pods"})
	inner := &recorder{t: t}
	var once sync.Once
	var innerReg cache.ResourceEventHandlerRegistration
	outer := &recorder{t: t, onEvent: func(line string) {
		if line == "update a@1 -> a@2" {
			once.Do(func() {
				var err error
				innerReg, err = inf.AddEventHandler(inner)
				assert.NoError(t, err)
			})
		}
		if line == "add b@1 initial=false" {
			assert.NoError(t, inf.RemoveEventHandler(innerReg))
		}
	}}
	_, err := inf.AddEventHandler(outer)
	require.NoError(t, err)
	run(t, inf)
	eventually(t, outer, []string{"add a@1 initial=true"})
	src.Modify(versioned("a", "2"))
	src.Add(versioned("b", "1"))
	src.Add(versioned("c", "1"))
	eventually(t, outer, []string{"add a@1 initial=true", "update a@1 -> a@2", "add b@1 initial=false", "add c@1 initial=false"})
	assert.Equal(t, []string{"add a@2 initial=true"}, inner.seen(),
		"the inner handler joined at a@2 and was removed before b reached it (the outer handler comes first)")
}

// Only handlers that asked for a resync get one, when their period elapsed.
// From then on, an update that kept its resourceVersion (a client-go fake
// clientset's objects have none) counts as a resync too: it reaches the
// handlers whose resync was due at the last check, as in client-go.
func TestResyncReachesOnlyHandlersThatAskedForIt(t *testing.T) {
	src := newScripted("10", at(versioned("a", "1"), "5"))
	clk := testingclock.NewFakeClock(time.Now())
	inf := New(Options{ListerWatcher: src, ObjectType: &corev1.Pod{}, Name: "pods", Clock: clk})
	resyncing, quiet := &recorder{t: t}, &recorder{t: t}
	_, err := inf.AddEventHandlerWithResyncPeriod(resyncing, time.Minute)
	require.NoError(t, err)
	_, err = inf.AddEventHandler(quiet)
	require.NoError(t, err)
	run(t, inf)
	eventually(t, resyncing, []string{"add a@1 initial=true"})
	w := <-src.watchers
	require.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond, "the reflector's resync timer is set")
	clk.Step(time.Minute)
	eventually(t, resyncing, []string{"add a@1 initial=true", "update a@1 -> a@1"})

	w.Modify(at(versioned("a", "2"), "5"))
	w.Modify(at(versioned("a", "3"), "8"))
	eventually(t, resyncing, []string{"add a@1 initial=true", "update a@1 -> a@1", "update a@1 -> a@2", "update a@2 -> a@3"})
	eventually(t, quiet, []string{"add a@1 initial=true", "update a@2 -> a@3"})
}

func TestTransformAppliesToEveryStoredObject(t *testing.T) {
	src := newSource(t, versioned("a", "1"))
	inf := New(Options{ListerWatcher: src, ObjectType: &corev1.Pod{}, Name: "pods"})
	require.NoError(t, inf.SetTransform(func(obj any) (any, error) {
		p := obj.(*corev1.Pod).DeepCopy()
		p.Annotations["v"] += "t"
		return p, nil
	}))
	r := &recorder{t: t}
	_, err := inf.AddEventHandler(r)
	require.NoError(t, err)
	run(t, inf)
	eventually(t, r, []string{"add a@1t initial=true"})
	src.Modify(versioned("a", "2"))
	src.Delete(versioned("a", "3"))
	eventually(t, r, []string{"add a@1t initial=true", "update a@1t -> a@2t", "delete a@3t"})
	assert.ErrorIs(t, inf.SetTransform(nil), errStarted)
	assert.ErrorIs(t, inf.SetWatchErrorHandlerWithContext(nil), errStarted)
}

func TestStoppedInformerRefusesHandlers(t *testing.T) {
	src := newSource(t)
	inf := New(Options{ListerWatcher: src, ObjectType: &corev1.Pod{}, Name: "pods"})
	stop := run(t, inf)
	require.True(t, cache.WaitForCacheSync(t.Context().Done(), inf.HasSynced))
	assert.False(t, inf.IsStopped())
	stop()
	assert.True(t, inf.IsStopped())
	_, err := inf.AddEventHandler(&recorder{t: t})
	assert.ErrorContains(t, err, "pods")
	assert.Error(t, inf.AddIndexers(cache.Indexers{"x": cache.MetaNamespaceIndexFunc}))
	inf.RunWithContext(context.Background()) // returns at once: it ran
}

func TestIndexersAddedAfterStartIndexWhatIsCached(t *testing.T) {
	src := newSource(t, versioned("a", "1"))
	inf := New(Options{ListerWatcher: src, ObjectType: &corev1.Pod{}, Name: "pods"})
	run(t, inf)
	require.True(t, cache.WaitForCacheSync(t.Context().Done(), inf.HasSynced))
	require.NoError(t, inf.AddIndexers(cache.Indexers{"v": func(obj any) ([]string, error) {
		return []string{obj.(*corev1.Pod).Annotations["v"]}, nil
	}}))
	got, err := inf.GetIndexer().ByIndex("v", "1")
	require.NoError(t, err)
	assert.Len(t, got, 1)
}

// A registration made by another informer is refused by name.
func TestRemoveForeignRegistration(t *testing.T) {
	a := New(Options{ListerWatcher: newSource(t), ObjectType: &corev1.Pod{}, Name: "pods"})
	b := New(Options{ListerWatcher: newSource(t), ObjectType: &corev1.Pod{}, Name: "pods"})
	reg, err := a.AddEventHandler(&recorder{t: t})
	require.NoError(t, err)
	assert.NoError(t, b.RemoveEventHandler(reg), "not among b's handlers: nothing to remove")
	assert.Error(t, b.RemoveEventHandler(foreign{}))
}

type foreign struct {
	cache.ResourceEventHandlerRegistration
}
