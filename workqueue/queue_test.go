package workqueue_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kworkqueue "k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/workqueue"
)

// Existing controllers hold client-go's interfaces; the queue must satisfy them for any T.
var (
	_ kworkqueue.TypedRateLimitingInterface[int]                   = (*workqueue.Queue[int])(nil)
	_ kworkqueue.TypedRateLimitingInterface[struct{ a, b string }] = (*workqueue.Queue[struct{ a, b string }])(nil)
)

// waitTimeout bounds how long a test waits for a goroutine's answer; reaching it is a failure.
const waitTimeout = 10 * time.Second

func newFakeQueue(t *testing.T, opts ...workqueue.Option[string]) (*workqueue.Queue[string], *testingclock.FakeClock) {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	q := workqueue.New(append([]workqueue.Option[string]{workqueue.WithClock[string](clk)}, opts...)...)
	t.Cleanup(q.ShutDown)
	return q, clk
}

type getResult struct {
	item     string
	shutdown bool
}

// getAsync calls Get in a goroutine; the result arrives on the channel.
func getAsync(q *workqueue.Queue[string]) <-chan getResult {
	ch := make(chan getResult, 1)
	go func() {
		item, shutdown := q.Get()
		ch <- getResult{item, shutdown}
	}()
	return ch
}

func receive(t *testing.T, ch <-chan getResult) getResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(waitTimeout):
		t.Fatal("Get did not return")
		return getResult{}
	}
}

func mustGet(t *testing.T, q *workqueue.Queue[string], want string) {
	t.Helper()
	got, shutdown := q.Get()
	require.False(t, shutdown, "Get reported shutdown")
	require.Equal(t, want, got)
}

func drainOrder(q *workqueue.Queue[string]) []string {
	var out []string
	for q.Len() > 0 {
		item, _ := q.Get()
		out = append(out, item)
		q.Done(item)
	}
	return out
}

func TestAddDedupsUntilGet(t *testing.T) {
	q, _ := newFakeQueue(t)
	for range 5 {
		q.Add("a")
	}
	q.Add("b")
	assert.Equal(t, 2, q.Len())
	assert.Equal(t, []string{"a", "b"}, drainOrder(q))
	assert.Equal(t, 0, q.Len())
}

func TestFIFOWithinPriority(t *testing.T) {
	q, _ := newFakeQueue(t)
	for _, k := range []string{"c", "a", "b", "a", "d"} {
		q.Add(k)
	}
	assert.Equal(t, []string{"c", "a", "b", "d"}, drainOrder(q))
}

func TestAddWhileProcessingWaitsForDone(t *testing.T) {
	q, _ := newFakeQueue(t)
	q.Add("a")
	mustGet(t, q, "a")

	q.Add("a")
	q.Add("a")
	assert.Equal(t, 0, q.Len(), "an item being processed is not ready")

	// A second worker must not get "a" while the first holds it: it gets the next item instead.
	second := getAsync(q)
	q.Add("b")
	assert.Equal(t, getResult{"b", false}, receive(t, second))

	q.Done("a")
	assert.Equal(t, 1, q.Len(), "Done re-queues an item added while processing")
	mustGet(t, q, "a")
	q.Done("a")
	q.Done("b")
	assert.Equal(t, 0, q.Len())
}

func TestDoneOfUnknownOrQueuedItemDoesNothing(t *testing.T) {
	q, _ := newFakeQueue(t)
	q.Done("never-added")
	q.Add("a")
	q.Done("a") // not being processed: must not queue a second copy
	assert.Equal(t, 1, q.Len())
	mustGet(t, q, "a")
	q.Done("a")
	q.Done("a")
	assert.Equal(t, 0, q.Len())
}

func TestGetBlocksUntilAdd(t *testing.T) {
	q, _ := newFakeQueue(t)
	ch := getAsync(q)
	q.Add("late")
	assert.Equal(t, getResult{"late", false}, receive(t, ch))
}

func TestGettersAreServedOnePerItem(t *testing.T) {
	q, _ := newFakeQueue(t)
	chs := make([]<-chan getResult, 4)
	for i := range chs {
		chs[i] = getAsync(q)
	}
	q.AddWithOpts(workqueue.AddOpts{}, "a", "b", "c", "d")
	got := map[string]bool{}
	for _, ch := range chs {
		r := receive(t, ch)
		require.False(t, r.shutdown)
		got[r.item] = true
	}
	assert.Equal(t, map[string]bool{"a": true, "b": true, "c": true, "d": true}, got)
}

func TestShutDownWakesEveryGetter(t *testing.T) {
	q, _ := newFakeQueue(t)
	chs := make([]<-chan getResult, 8)
	for i := range chs {
		chs[i] = getAsync(q)
	}
	q.ShutDown()
	for _, ch := range chs {
		assert.Equal(t, getResult{"", true}, receive(t, ch))
	}
	assert.True(t, q.ShuttingDown())
}

func TestAddsAfterShutDownAreIgnored(t *testing.T) {
	q, clk := newFakeQueue(t)
	q.ShutDown()
	q.Add("a")
	q.AddAfter("b", time.Second)
	q.AddAfter("c", 0)
	q.AddRateLimited("d")
	q.AddWithOpts(workqueue.AddOpts{Priority: 3}, "e")
	q.AddWithOpts(workqueue.AddOpts{RateLimited: true}, "f")
	clk.Step(time.Hour)
	assert.Equal(t, 0, q.Len())
	assert.Equal(t, 0, q.NumRequeues("d"), "the limiter is not consulted after shutdown")
	_, shutdown := q.Get()
	assert.True(t, shutdown)
}

func TestGetHandsOutRemainingItemsAfterShutDown(t *testing.T) {
	q, _ := newFakeQueue(t)
	q.Add("a")
	q.Add("b")
	q.ShutDown()
	assert.True(t, q.ShuttingDown())
	mustGet(t, q, "a")
	mustGet(t, q, "b")
	_, shutdown := q.Get()
	assert.True(t, shutdown)
	q.Done("a")
	q.Done("b")
}

func TestShutDownTwiceIsFine(t *testing.T) {
	q, _ := newFakeQueue(t)
	q.ShutDown()
	q.ShutDown()
	q.ShutDownWithDrain()
	assert.True(t, q.ShuttingDown())
}

func TestShutDownWithDrainWaitsForQueuedAndProcessing(t *testing.T) {
	q, _ := newFakeQueue(t)
	q.Add("a")
	q.Add("b")
	q.Add("c")
	mustGet(t, q, "a") // processing; "b" and "c" still queued

	drained := make(chan struct{})
	go func() {
		defer close(drained)
		q.ShutDownWithDrain()
	}()
	notYet := func(why string) {
		t.Helper()
		select {
		case <-drained:
			t.Fatalf("ShutDownWithDrain returned while %s", why)
		default:
		}
	}
	notYet("a was processing and b, c were queued")
	q.Done("a")
	notYet("b and c were queued")
	mustGet(t, q, "b")
	mustGet(t, q, "c")
	q.Done("b")
	notYet("c was processing")
	q.Done("c")
	select {
	case <-drained:
	case <-time.After(waitTimeout):
		t.Fatal("ShutDownWithDrain did not return after everything was done")
	}
	_, shutdown := q.Get()
	assert.True(t, shutdown)
}

func TestShutDownEndsDrain(t *testing.T) {
	q, _ := newFakeQueue(t)
	q.Add("stuck")
	mustGet(t, q, "stuck")
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		q.ShutDownWithDrain()
	}()
	// Get reports shutdown once the drain has begun (both happen under one lock).
	_, shutdown := q.Get()
	require.True(t, shutdown)
	q.ShutDown() // like a second SIGTERM: stop waiting for "stuck"
	select {
	case <-drained:
	case <-time.After(waitTimeout):
		t.Fatal("ShutDown did not end ShutDownWithDrain")
	}
}

func TestAddAfterWaitsForTheDelay(t *testing.T) {
	q, clk := newFakeQueue(t)
	q.AddAfter("a", 50*time.Millisecond)
	assert.Equal(t, 0, q.Len())
	clk.Step(49 * time.Millisecond)
	assert.Equal(t, 0, q.Len())
	clk.Step(time.Millisecond)
	assert.Equal(t, 1, q.Len())
	mustGet(t, q, "a")
	q.Done("a")
	clk.Step(time.Hour)
	assert.Equal(t, 0, q.Len(), "a delayed item is added once")
}

func TestAddAfterNonPositiveAddsAtOnce(t *testing.T) {
	q, _ := newFakeQueue(t)
	q.AddAfter("zero", 0)
	q.AddAfter("negative", -time.Second)
	q.AddWithOpts(workqueue.AddOpts{After: -time.Second}, "opts")
	assert.Equal(t, []string{"zero", "negative", "opts"}, drainOrder(q))
}

func TestAddAfterKeepsTheEarlierReadyTime(t *testing.T) {
	q, clk := newFakeQueue(t)
	q.AddAfter("a", 50*time.Millisecond)
	q.AddAfter("a", 70*time.Millisecond) // later: ignored
	clk.Step(50 * time.Millisecond)
	assert.Equal(t, []string{"a"}, drainOrder(q))
	clk.Step(20 * time.Millisecond)
	assert.Equal(t, 0, q.Len(), "the later AddAfter did not create a second wait")

	q.AddAfter("a", 50*time.Millisecond)
	q.AddAfter("a", 30*time.Millisecond) // earlier: wins
	clk.Step(30 * time.Millisecond)
	assert.Equal(t, []string{"a"}, drainOrder(q))
	clk.Step(20 * time.Millisecond)
	assert.Equal(t, 0, q.Len())
}

func TestDelayedItemsComeOutInReadyOrder(t *testing.T) {
	q, clk := newFakeQueue(t)
	q.AddAfter("first", time.Second)
	q.AddAfter("second", 500*time.Millisecond)
	q.AddAfter("third", 250*time.Millisecond)
	q.AddAfter("tie-1", 500*time.Millisecond)
	q.AddAfter("tie-2", 500*time.Millisecond)
	clk.Step(2 * time.Second)
	assert.Equal(t, []string{"third", "second", "tie-1", "tie-2", "first"}, drainOrder(q))
}

func TestAddAfterOfAQueuedItemAddsItAgainLater(t *testing.T) {
	// client-go's delaying queue is a layer over the queue: the wait runs independently.
	q, clk := newFakeQueue(t)
	q.Add("a")
	q.AddAfter("a", time.Second)
	assert.Equal(t, []string{"a"}, drainOrder(q))
	clk.Step(time.Second)
	assert.Equal(t, []string{"a"}, drainOrder(q))
}

func TestDelayWakesABlockedGetter(t *testing.T) {
	q, clk := newFakeQueue(t)
	ch := getAsync(q)
	q.AddAfter("a", time.Minute)
	clk.Step(time.Minute) // one step: the delay goroutine hands "a" to the getter
	assert.Equal(t, getResult{"a", false}, receive(t, ch))
}

func TestShutDownDropsDelayedItems(t *testing.T) {
	q, clk := newFakeQueue(t)
	q.AddAfter("a", time.Second)
	q.ShutDown()
	clk.Step(time.Hour)
	assert.Equal(t, 0, q.Len())
	_, shutdown := q.Get()
	assert.True(t, shutdown)
}

func TestPriorityOrder(t *testing.T) {
	q, _ := newFakeQueue(t)
	q.AddWithOpts(workqueue.AddOpts{Priority: 0}, "p0-a")
	q.AddWithOpts(workqueue.AddOpts{Priority: -5}, "low-a", "low-b")
	q.AddWithOpts(workqueue.AddOpts{Priority: 10}, "high-a")
	q.AddWithOpts(workqueue.AddOpts{Priority: 0}, "p0-b")
	q.AddWithOpts(workqueue.AddOpts{Priority: 10}, "high-b")
	q.AddWithOpts(workqueue.AddOpts{Priority: 3}, "mid")
	assert.Equal(t, []string{"high-a", "high-b", "mid", "p0-a", "p0-b", "low-a", "low-b"}, drainOrder(q))
}

func TestPriorityKeepsTheHigher(t *testing.T) {
	q, _ := newFakeQueue(t)
	q.AddWithOpts(workqueue.AddOpts{Priority: 5}, "a")
	q.AddWithOpts(workqueue.AddOpts{Priority: 5}, "b")
	q.AddWithOpts(workqueue.AddOpts{Priority: 1}, "a") // lower: "a" stays at 5, first
	q.AddWithOpts(workqueue.AddOpts{Priority: 1}, "c")
	q.AddWithOpts(workqueue.AddOpts{Priority: 9}, "c") // higher: moves to the front priority
	assert.Equal(t, 3, q.Len())
	assert.Equal(t, []string{"c", "a", "b"}, drainOrder(q))
}

func TestRaisedPriorityGoesToTheBackOfItsNewPriority(t *testing.T) {
	q, _ := newFakeQueue(t)
	q.AddWithOpts(workqueue.AddOpts{Priority: 0}, "a", "b")
	q.AddWithOpts(workqueue.AddOpts{Priority: 1}, "x")
	q.AddWithOpts(workqueue.AddOpts{Priority: 1}, "a")
	assert.Equal(t, []string{"x", "a", "b"}, drainOrder(q))
}

func TestPriorityOfAnAddWhileProcessing(t *testing.T) {
	q, _ := newFakeQueue(t)
	q.Add("a")
	mustGet(t, q, "a")
	q.AddWithOpts(workqueue.AddOpts{Priority: 5}, "a")
	q.AddWithOpts(workqueue.AddOpts{Priority: 2}, "a") // the higher (5) is kept
	q.AddWithOpts(workqueue.AddOpts{Priority: 3}, "b")
	q.Done("a")
	assert.Equal(t, []string{"a", "b"}, drainOrder(q))
}

func TestPriorityCarriesThroughDelays(t *testing.T) {
	q, clk := newFakeQueue(t, workqueue.WithRateLimiter(
		kworkqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute)))
	q.AddWithOpts(workqueue.AddOpts{Priority: 7, After: time.Second}, "delayed")
	q.AddWithOpts(workqueue.AddOpts{Priority: 3, RateLimited: true}, "limited") // 1s
	q.AddWithOpts(workqueue.AddOpts{Priority: 5}, "now")
	clk.Step(time.Second)
	assert.Equal(t, []string{"delayed", "now", "limited"}, drainOrder(q))
}

func TestDelayedPriorityKeepsTheHigher(t *testing.T) {
	q, clk := newFakeQueue(t)
	q.AddWithOpts(workqueue.AddOpts{Priority: 4, After: time.Second}, "a")
	q.AddWithOpts(workqueue.AddOpts{Priority: 1, After: 2 * time.Second}, "a")
	q.AddWithOpts(workqueue.AddOpts{Priority: 2}, "b")
	clk.Step(time.Second)
	assert.Equal(t, []string{"a", "b"}, drainOrder(q))
}

func TestRateLimitedAndAfterUseTheShorterDelay(t *testing.T) {
	q, clk := newFakeQueue(t, workqueue.WithRateLimiter(
		kworkqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute)))
	q.AddWithOpts(workqueue.AddOpts{RateLimited: true, After: 10 * time.Millisecond}, "short-after")
	q.AddWithOpts(workqueue.AddOpts{RateLimited: true, After: time.Hour}, "short-limit")
	assert.Equal(t, 1, q.NumRequeues("short-after"), "the limiter counts the requeue either way")
	clk.Step(10 * time.Millisecond)
	assert.Equal(t, []string{"short-after"}, drainOrder(q))
	clk.Step(990 * time.Millisecond)
	assert.Equal(t, []string{"short-limit"}, drainOrder(q))
}

func TestAddRateLimitedBacksOffPerItem(t *testing.T) {
	q, clk := newFakeQueue(t, workqueue.WithRateLimiter(
		kworkqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, time.Second)))

	q.AddRateLimited("one") // 1ms
	clk.Step(time.Millisecond)
	assert.Equal(t, []string{"one"}, drainOrder(q))
	q.AddRateLimited("one") // 2ms
	clk.Step(time.Millisecond)
	assert.Equal(t, 0, q.Len())
	clk.Step(time.Millisecond)
	assert.Equal(t, []string{"one"}, drainOrder(q))
	assert.Equal(t, 2, q.NumRequeues("one"))

	q.AddRateLimited("two") // 1ms: items back off independently
	clk.Step(time.Millisecond)
	assert.Equal(t, []string{"two"}, drainOrder(q))

	q.Forget("one")
	assert.Equal(t, 0, q.NumRequeues("one"))
	q.AddRateLimited("one") // 1ms again
	clk.Step(time.Millisecond)
	assert.Equal(t, []string{"one"}, drainOrder(q))
}

func TestDefaultRateLimiterIsClientGosControllerDefault(t *testing.T) {
	q, clk := newFakeQueue(t)
	q.AddRateLimited("a") // max(5ms exponential, bucket with burst left: 0)
	clk.Step(5*time.Millisecond - 1)
	assert.Equal(t, 0, q.Len())
	clk.Step(1)
	assert.Equal(t, []string{"a"}, drainOrder(q))
	q.AddRateLimited("a") // 10ms
	clk.Step(10*time.Millisecond - 1)
	assert.Equal(t, 0, q.Len())
	clk.Step(1)
	assert.Equal(t, []string{"a"}, drainOrder(q))
	assert.Equal(t, 2, q.NumRequeues("a"))
}

func TestNilOptionsMeanDefaults(t *testing.T) {
	q := workqueue.New(nil, workqueue.WithClock[string](nil), workqueue.WithRateLimiter[string](nil),
		workqueue.WithMetricsProvider[string](nil), workqueue.WithName[string](""))
	defer q.ShutDown()
	q.AddAfter("a", time.Nanosecond)
	q.AddRateLimited("b")
	assert.Equal(t, 1, q.NumRequeues("b"))
	require.Eventually(t, func() bool { return q.Len() == 2 }, waitTimeout, time.Millisecond,
		"the real clock must release both items")
}

func TestConcurrentShutDownWithProducersAndGetters(t *testing.T) {
	q := workqueue.New[int]()
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				q.Add(p*1000 + i)
				q.AddAfter(p*1000+i, time.Duration(i%3)*time.Microsecond)
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for {
				item, shutdown := q.Get()
				if shutdown {
					return
				}
				q.Done(item)
			}
		})
	}
	wg.Go(q.ShutDown)
	wg.Wait()
	assert.True(t, q.ShuttingDown())
}
