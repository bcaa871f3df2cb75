package workqueue_test

// The scenarios of client-go v0.37.2's util/workqueue tests (queue_test.go, delaying_queue_test.go,
// rate_limiting_queue_test.go), rewritten against this queue: a drop-in must pass them. Where
// upstream sleeps or polls to wait for its delay goroutine, these use the fake clock and Len,
// which hand out due items at once.

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kworkqueue "k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/workqueue"
)

var shutDownFuncs = map[string]func(*workqueue.Queue[any]){
	"ShutDown":          (*workqueue.Queue[any]).ShutDown,
	"ShutDownWithDrain": (*workqueue.Queue[any]).ShutDownWithDrain,
}

func TestUpstreamBasic(t *testing.T) {
	for name, shutDown := range shutDownFuncs {
		t.Run(name, func(t *testing.T) {
			q := workqueue.New[any]()
			const producers, consumers = 50, 10
			var producerWG, consumerWG sync.WaitGroup
			for i := range producers {
				producerWG.Go(func() {
					for range 50 {
						q.Add(i)
						runtime.Gosched()
					}
				})
			}
			for range consumers {
				consumerWG.Go(func() {
					for {
						item, quit := q.Get()
						if item == "added after shutdown!" {
							t.Errorf("got an item added after shutdown")
						}
						if quit {
							return
						}
						runtime.Gosched()
						q.Done(item)
					}
				})
			}
			producerWG.Wait()
			shutDown(q)
			q.Add("added after shutdown!")
			consumerWG.Wait()
			assert.Equal(t, 0, q.Len())
		})
	}
}

func TestUpstreamAddWhileProcessing(t *testing.T) {
	for name, shutDown := range shutDownFuncs {
		t.Run(name, func(t *testing.T) {
			q := workqueue.New[any]()
			const producers, consumers = 50, 10
			var producerWG, consumerWG sync.WaitGroup
			for i := range producers {
				producerWG.Go(func() { q.Add(i) })
			}
			for range consumers {
				consumerWG.Go(func() {
					// Every worker re-adds every item up to two times: the dirty-while-processing case.
					counters := map[any]int{}
					for {
						item, quit := q.Get()
						if quit {
							return
						}
						counters[item]++
						if counters[item] < 2 {
							q.Add(item)
						}
						q.Done(item)
					}
				})
			}
			producerWG.Wait()
			shutDown(q)
			consumerWG.Wait()
			assert.Equal(t, 0, q.Len())
		})
	}
}

func TestUpstreamLen(t *testing.T) {
	q := workqueue.New[string]()
	defer q.ShutDown()
	q.Add("foo")
	assert.Equal(t, 1, q.Len())
	q.Add("bar")
	assert.Equal(t, 2, q.Len())
	q.Add("foo") // should not increase the queue length
	assert.Equal(t, 2, q.Len())
}

func TestUpstreamReinsert(t *testing.T) {
	q := workqueue.New[string]()
	defer q.ShutDown()
	q.Add("foo")
	i, _ := q.Get()
	assert.Equal(t, "foo", i)
	q.Add(i) // add it back while processing
	q.Done(i)
	i, _ = q.Get() // it should be back on the queue
	assert.Equal(t, "foo", i)
	q.Done(i)
	assert.Equal(t, 0, q.Len())
}

func TestUpstreamCollapse(t *testing.T) {
	q := workqueue.New[string]()
	defer q.ShutDown()
	q.Add("bar")
	q.Add("bar")
	i, _ := q.Get()
	assert.Equal(t, "bar", i)
	q.Done(i)
	assert.Equal(t, 0, q.Len())
}

func TestUpstreamCollapseWhileProcessing(t *testing.T) {
	q := workqueue.New[string]()
	defer q.ShutDown()
	q.Add("foo")
	i, _ := q.Get()
	assert.Equal(t, "foo", i)
	q.Add("foo")
	q.Add("foo")

	waitCh := make(chan struct{})
	go func() { // another worker
		defer close(waitCh)
		i, _ := q.Get()
		assert.Equal(t, "foo", i)
		q.Done(i)
	}()
	// Upstream sleeps to let the worker block. Here: "foo" is not ready while processing, so the
	// worker cannot have it yet.
	assert.Equal(t, 0, q.Len())
	select {
	case <-waitCh:
		t.Fatal("worker got foo while it was processing")
	default:
		q.Done("foo")
	}
	<-waitCh
	assert.Equal(t, 0, q.Len())
}

func TestUpstreamQueueDrainageUsingShutDownWithDrain(t *testing.T) {
	q := workqueue.New[string]()
	q.Add("foo")
	q.Add("bar")
	firstItem, _ := q.Get()
	secondItem, _ := q.Get()

	var finished sync.WaitGroup
	finished.Go(q.ShutDownWithDrain)
	// ShutDownWithDrain has been called once Get reports shutdown.
	for shuttingDown := false; !shuttingDown; {
		_, shuttingDown = q.Get()
	}
	q.Done(firstItem)
	q.Done(secondItem)
	finished.Wait()
}

func TestUpstreamNoQueueDrainageUsingShutDown(t *testing.T) {
	q := workqueue.New[string]()
	q.Add("foo")
	q.Add("bar")
	q.Get()
	q.Get()
	var finished sync.WaitGroup
	finished.Go(q.ShutDown) // does not wait for the two items
	finished.Wait()
}

func TestUpstreamForceQueueShutdownUsingShutDown(t *testing.T) {
	q := workqueue.New[string]()
	q.Add("foo")
	q.Add("bar")
	q.Get()
	q.Get()
	var finished sync.WaitGroup
	finished.Go(q.ShutDownWithDrain)
	for shuttingDown := false; !shuttingDown; {
		_, shuttingDown = q.Get()
	}
	q.ShutDown() // forces ShutDownWithDrain to stop waiting
	finished.Wait()
}

func TestUpstreamQueueDrainageUsingShutDownWithDrainWithDirtyItem(t *testing.T) {
	q := workqueue.New[string]()
	q.Add("foo")
	gotten, _ := q.Get()
	q.Add("foo")

	var finished sync.WaitGroup
	finished.Go(q.ShutDownWithDrain)
	for shuttingDown := false; !shuttingDown; {
		_, shuttingDown = q.Get()
	}
	q.Done(gotten)
	// Done put the dirty item back: it is handed out, not lost.
	again, shuttingDown := q.Get()
	require.False(t, shuttingDown, "should not have been done")
	q.Done(again)
	_, shuttingDown = q.Get()
	require.True(t, shuttingDown, "should have been done")
	finished.Wait()
}

// TestClientGoDrainReturnsWithItemsQueued documents the upstream behaviour ctrlkit does not copy
// (see TestShutDownWithDrainWaitsForQueuedAndProcessing): client-go's drain waits only for items
// being processed, so it returns at once while items are still queued.
func TestClientGoDrainReturnsWithItemsQueued(t *testing.T) {
	q := kworkqueue.NewTyped[string]()
	q.Add("foo")
	q.Add("bar")
	q.ShutDownWithDrain() // returns: nothing is processing
	assert.Equal(t, 2, q.Len(), "client-go drained with two items never handed out")
}

type bigObject struct{ data []byte }

// TestUpstreamGarbageCollection: objects added then removed from the queue can be collected.
func TestUpstreamGarbageCollection(t *testing.T) {
	leakQueue := workqueue.New[any]()
	t.Cleanup(func() { runtime.KeepAlive(leakQueue) })
	c := &bigObject{data: []byte("hello")}
	mustGarbageCollect(t, c)
	leakQueue.Add(c)
	o, _ := leakQueue.Get()
	leakQueue.Done(o)
}

// mustGarbageCollect asserts that the object (a pointer) is collected by the end of the test.
func mustGarbageCollect(t *testing.T, obj any) {
	t.Helper()
	var collected atomic.Bool
	runtime.SetFinalizer(obj, func(any) { collected.Store(true) })
	t.Cleanup(func() {
		// Finalizers run after a GC cycle notices the object: poll, forcing collections.
		assert.Eventually(t, func() bool {
			runtime.GC()
			return collected.Load()
		}, waitTimeout, 10*time.Millisecond, "object was not garbage collected")
	})
}

func TestUpstreamSimpleQueue(t *testing.T) {
	fakeClock := testingclock.NewFakeClock(time.Now())
	q := workqueue.New(workqueue.WithClock[string](fakeClock))
	defer q.ShutDown()

	q.AddAfter("foo", 50*time.Millisecond)
	assert.Equal(t, 0, q.Len(), "should not have added")
	fakeClock.Step(60 * time.Millisecond)
	assert.Equal(t, 1, q.Len(), "should have added")
	item, _ := q.Get()
	q.Done(item)
	fakeClock.Step(10 * time.Second) // past upstream's heartbeat
	assert.Equal(t, 0, q.Len(), "should not have added")
}

func TestUpstreamDeduping(t *testing.T) {
	fakeClock := testingclock.NewFakeClock(time.Now())
	q := workqueue.New(workqueue.WithClock[string](fakeClock))
	defer q.ShutDown()

	q.AddAfter("foo", 50*time.Millisecond)
	q.AddAfter("foo", 70*time.Millisecond)
	assert.Equal(t, 0, q.Len())
	fakeClock.Step(60 * time.Millisecond) // past the first: we should receive now
	assert.Equal(t, 1, q.Len())
	item, _ := q.Get()
	q.Done(item)
	fakeClock.Step(20 * time.Millisecond) // past the second add
	assert.Equal(t, 0, q.Len())

	// again, but this time the earlier should override
	q.AddAfter("foo", 50*time.Millisecond)
	q.AddAfter("foo", 30*time.Millisecond)
	assert.Equal(t, 0, q.Len())
	fakeClock.Step(40 * time.Millisecond)
	assert.Equal(t, 1, q.Len())
	item, _ = q.Get()
	q.Done(item)
	fakeClock.Step(20 * time.Millisecond)
	assert.Equal(t, 0, q.Len())
}

func TestUpstreamAddTwoFireEarly(t *testing.T) {
	fakeClock := testingclock.NewFakeClock(time.Now())
	q := workqueue.New(workqueue.WithClock[string](fakeClock))
	defer q.ShutDown()

	q.AddAfter("foo", 1*time.Second)
	q.AddAfter("bar", 50*time.Millisecond)
	assert.Equal(t, 0, q.Len())
	fakeClock.Step(60 * time.Millisecond)
	require.Equal(t, 1, q.Len())
	item, _ := q.Get()
	assert.Equal(t, "bar", item)

	q.AddAfter("baz", 2*time.Second)
	fakeClock.Step(1 * time.Second)
	require.Equal(t, 1, q.Len())
	item, _ = q.Get()
	assert.Equal(t, "foo", item)

	fakeClock.Step(2 * time.Second)
	require.Equal(t, 1, q.Len())
	item, _ = q.Get()
	assert.Equal(t, "baz", item)
}

func TestUpstreamCopyShifting(t *testing.T) {
	fakeClock := testingclock.NewFakeClock(time.Now())
	q := workqueue.New(workqueue.WithClock[string](fakeClock))
	defer q.ShutDown()

	q.AddAfter("foo", 1*time.Second)
	q.AddAfter("bar", 500*time.Millisecond)
	q.AddAfter("baz", 250*time.Millisecond)
	assert.Equal(t, 0, q.Len())
	fakeClock.Step(2 * time.Second)
	require.Equal(t, 3, q.Len())
	for _, want := range []string{"baz", "bar", "foo"} {
		got, _ := q.Get()
		assert.Equal(t, want, got)
	}
}

func TestUpstreamRateLimitingQueue(t *testing.T) {
	fakeClock := testingclock.NewFakeClock(time.Now())
	q := workqueue.New(
		workqueue.WithClock[string](fakeClock),
		workqueue.WithRateLimiter(kworkqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, time.Second)),
	)
	defer q.ShutDown()

	// readyAfter reports the delay of a rate-limited add by stepping until it is ready.
	readyAfter := func(item string) time.Duration {
		t.Helper()
		var waited time.Duration
		for q.Len() == 0 {
			require.Less(t, waited, time.Second, "%s never became ready", item)
			fakeClock.Step(time.Millisecond)
			waited += time.Millisecond
		}
		got, _ := q.Get()
		require.Equal(t, item, got)
		q.Done(got)
		return waited
	}

	q.AddRateLimited("one")
	assert.Equal(t, time.Millisecond, readyAfter("one"))
	q.AddRateLimited("one")
	assert.Equal(t, 2*time.Millisecond, readyAfter("one"))
	assert.Equal(t, 2, q.NumRequeues("one"))

	q.AddRateLimited("two")
	assert.Equal(t, time.Millisecond, readyAfter("two"))
	q.AddRateLimited("two")
	assert.Equal(t, 2*time.Millisecond, readyAfter("two"))

	q.Forget("one")
	assert.Equal(t, 0, q.NumRequeues("one"))
	q.AddRateLimited("one")
	assert.Equal(t, time.Millisecond, readyAfter("one"))
}
