package workqueue_test

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	kworkqueue "k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/workqueue"
)

// A key added several times before a worker gets it is handed out once.
func Example() {
	q := workqueue.New[string]()
	defer q.ShutDown()

	q.Add("default/web")
	q.Add("default/db")
	q.Add("default/web") // already queued: no second copy
	fmt.Println("queued:", q.Len())

	for q.Len() > 0 {
		key, _ := q.Get()
		fmt.Println("processing", key)
		q.Done(key)
	}
	// Output:
	// queued: 2
	// processing default/web
	// processing default/db
}

// Workers run the canonical loop; ShutDownWithDrain returns once everything queued is done.
func ExampleQueue_ShutDownWithDrain() {
	q := workqueue.New[string]()
	for i := range 5 {
		q.Add(fmt.Sprintf("ns/obj-%d", i))
	}

	var (
		mu   sync.Mutex
		done []string
		wg   sync.WaitGroup
	)
	for range 2 {
		wg.Go(func() {
			for {
				key, shutdown := q.Get()
				if shutdown {
					return
				}
				mu.Lock()
				done = append(done, key)
				mu.Unlock()
				q.Forget(key)
				q.Done(key)
			}
		})
	}
	q.ShutDownWithDrain()
	wg.Wait()
	sort.Strings(done)
	fmt.Println(done)
	// Output:
	// [ns/obj-0 ns/obj-1 ns/obj-2 ns/obj-3 ns/obj-4]
}

// Higher priorities are handed out first, FIFO within one priority; re-adding an item at a
// higher priority moves it up.
func ExampleQueue_AddWithOpts() {
	q := workqueue.New[string]()
	defer q.ShutDown()

	q.AddWithOpts(workqueue.AddOpts{Priority: -100}, "resync/a", "resync/b", "resync/c")
	q.Add("event/x")
	q.AddWithOpts(workqueue.AddOpts{Priority: 10}, "resync/c") // the user touched c

	for q.Len() > 0 {
		key, _ := q.Get()
		fmt.Println(key)
		q.Done(key)
	}
	// Output:
	// resync/c
	// event/x
	// resync/a
	// resync/b
}

// AddAfter holds an item back; an item already waiting keeps the earlier ready time. A fake
// clock makes time explicit.
func ExampleQueue_AddAfter() {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	q := workqueue.New(workqueue.WithClock[string](clk))
	defer q.ShutDown()

	q.AddAfter("ns/slow", time.Minute)
	q.AddAfter("ns/slow", 10*time.Second) // earlier: wins
	q.AddAfter("ns/slow", time.Hour)      // later: ignored
	fmt.Println("ready now:", q.Len())

	clk.Step(10 * time.Second)
	fmt.Println("ready after 10s:", q.Len())
	key, _ := q.Get()
	fmt.Println("got", key)
	q.Done(key)
	// Output:
	// ready now: 0
	// ready after 10s: 1
	// got ns/slow
}

// AddRateLimited backs off per item; Forget starts the backoff over.
func ExampleQueue_AddRateLimited() {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	q := workqueue.New(
		workqueue.WithClock[string](clk),
		workqueue.WithRateLimiter(kworkqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute)),
	)
	defer q.ShutDown()

	q.AddRateLimited("ns/flaky") // ready in 1s
	q.AddRateLimited("ns/flaky") // would be 2s; the earlier ready time stays
	fmt.Println("requeues:", q.NumRequeues("ns/flaky"))

	clk.Step(time.Second)
	key, _ := q.Get()
	fmt.Println("got", key)
	q.Forget(key)
	q.Done(key)
	fmt.Println("requeues after Forget:", q.NumRequeues(key))
	// Output:
	// requeues: 2
	// got ns/flaky
	// requeues after Forget: 0
}

// The options carry the queue's item type: New infers it from the limiter, and a limiter for
// another item type is a compile error, not a fallback at run time. Here the keys are structs.
func ExampleWithRateLimiter() {
	type key struct{ namespace, name string }
	limiter := kworkqueue.NewTypedItemExponentialFailureRateLimiter[key](time.Second, time.Minute)
	var q *workqueue.Queue[key] = workqueue.New(workqueue.WithName[key]("pods"), workqueue.WithRateLimiter(limiter))
	defer q.ShutDown()
	// workqueue.New(workqueue.WithName[string]("pods"), workqueue.WithRateLimiter(limiter))
	// does not compile: the options disagree on the item type.

	k := key{namespace: "default", name: "web"}
	q.AddRateLimited(k)
	q.AddRateLimited(k)
	fmt.Println("requeues:", q.NumRequeues(k))
	// Output:
	// requeues: 2
}

// A queue with provenance tells the worker why an item was added: the causes merged while it
// waited, counted by kind, with the first and the last in full. What a kind means is the
// caller's business (ctrlkit's controller names its kinds "event", "retry", and so on).
func ExampleWithProvenance() {
	const (
		event uint8 = 1 + iota
		retry
	)
	q := workqueue.New(workqueue.WithProvenance[string]())
	defer q.ShutDown()

	q.AddWithOpts(workqueue.AddOpts{Cause: workqueue.Cause{
		Kind: event, Source: "replicasets.apps", Namespace: "default", Name: "web",
	}}, "default/web")
	q.AddWithOpts(workqueue.AddOpts{Cause: workqueue.Cause{
		Kind: event, Source: "pods", Namespace: "default", Name: "web-x7k2p",
	}}, "default/web")
	q.AddWithOpts(workqueue.AddOpts{Cause: workqueue.Cause{Kind: retry, N: 1}}, "default/web")

	key, rec, _ := q.GetWithRecord()
	fmt.Println(key, "added", rec.Total, "times:", rec.Count(event), "events and", rec.Count(retry), "retry")
	fmt.Println("first:", rec.First.Source, rec.First.Namespace+"/"+rec.First.Name)
	fmt.Println("last: retry", rec.Last.N)
	q.Done(key)
	// Output:
	// default/web added 3 times: 2 events and 1 retry
	// first: replicasets.apps default/web
	// last: retry 1
}

// A worker loop that hands each key back and takes the next one in one step, waiting in Get
// only when nothing is ready: the loop of ctrlkit's controllers.
func ExampleQueue_DoneAndTryGet() {
	q := workqueue.New[string]()
	defer q.ShutDown()
	q.Add("default/web")
	q.Add("default/db")

	key, _ := q.Get()
	for {
		fmt.Println("processing", key)
		next, ok := q.DoneAndTryGet(key)
		if !ok {
			break // a worker would wait in Get here
		}
		key = next
	}
	fmt.Println("queued:", q.Len())
	// Output:
	// processing default/web
	// processing default/db
	// queued: 0
}

// With flows, one tenant's burst does not hold the other tenants back: the flows with ready
// items take turns, here one item each, and a heavier weight takes more a turn.
func ExampleWithFlows() {
	tenant := func(key string) string { t, _, _ := strings.Cut(key, "/"); return t }
	q := workqueue.New(
		workqueue.WithFlows(tenant),
		workqueue.WithFlowWeights[string](func(flow string) int {
			if flow == "gold" {
				return 2
			}
			return 1
		}),
	)
	defer q.ShutDown()

	q.AddWithOpts(workqueue.AddOpts{}, "noisy/1", "noisy/2", "noisy/3", "noisy/4")
	q.Add("quiet/1")
	q.AddWithOpts(workqueue.AddOpts{}, "gold/1", "gold/2", "gold/3")

	for q.Len() > 0 {
		key, _ := q.Get()
		fmt.Println(key)
		q.Done(key)
	}
	// Output:
	// noisy/1
	// quiet/1
	// gold/1
	// gold/2
	// noisy/2
	// gold/3
	// noisy/3
	// noisy/4
}

// With aging, an item kept below a busy higher priority moves up once it has waited the bound
// (and less than 5/4 of it), so priorities order the work without starving any of it.
func ExampleWithAging() {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	q := workqueue.New(workqueue.WithClock[string](clk), workqueue.WithAging[string](time.Minute))
	defer q.ShutDown()

	q.AddWithOpts(workqueue.AddOpts{Priority: -100}, "resync/a")
	q.AddWithOpts(workqueue.AddOpts{Priority: 0}, "event/1")
	clk.Step(time.Minute + 15*time.Second)
	q.Len() // the queue's goroutine ages items at each tick; Len does it at once
	q.AddWithOpts(workqueue.AddOpts{Priority: 0}, "event/2")

	for q.Len() > 0 {
		key, _ := q.Get()
		fmt.Println(key)
		q.Done(key)
	}
	// Output:
	// event/1
	// resync/a
	// event/2
}

// A retry added with Hold keeps its key out until its delay ends: an event for the key
// meanwhile joins the retry instead of running it early (and failing again during the fault).
func ExampleAddOpts_hold() {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	q := workqueue.New(workqueue.WithClock[string](clk))
	defer q.ShutDown()

	q.Add("ns/web")
	key, _ := q.Get()
	// The Reconcile of key failed: retry in 10 s, held.
	q.AddWithOpts(workqueue.AddOpts{After: 10 * time.Second, Hold: true}, key)
	q.Done(key)

	q.Add("ns/web") // an event for the key
	fmt.Println("ready after the event:", q.Len())
	clk.Step(10 * time.Second)
	fmt.Println("ready after 10s:", q.Len())
	// Output:
	// ready after the event: 0
	// ready after 10s: 1
}
