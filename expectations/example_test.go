package expectations_test

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/expectations"
)

// A sync creates two Pods; until the informer has seen both, the key is not satisfied and
// the controller must not trust its cache.
func Example() {
	exp := expectations.New[string]()
	key := "default/web"

	fmt.Println("before any sync:", exp.Satisfied(key))
	exp.ExpectCreations(key, 2)
	fmt.Println("after creating two:", exp.Satisfied(key))

	exp.CreationObserved(key) // the Pod informer's add handler
	add, _, _ := exp.Get(key)
	fmt.Println("one seen, still pending:", add, exp.Satisfied(key))

	exp.CreationObserved(key)
	fmt.Println("both seen:", exp.Satisfied(key))
	// Output:
	// before any sync: true
	// after creating two: false
	// one seen, still pending: 1 false
	// both seen: true
}

// When a watch event is lost, the record expires after the TTL and the controller resyncs
// instead of waiting forever.
func ExampleWithTTL() {
	clk := testingclock.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	exp := expectations.New[string](expectations.WithTTL(time.Minute), expectations.WithClock(clk))

	exp.ExpectDeletions("default/web", 1)
	fmt.Println("waiting:", !exp.Satisfied("default/web"))
	clk.SetTime(clk.Now().Add(61 * time.Second))
	fmt.Println("expired, satisfied:", exp.Satisfied("default/web"))
	// Output:
	// waiting: true
	// expired, satisfied: true
}

// A failed create will never be observed: lower the expectation so the key is not stuck
// until the TTL.
func ExampleExpectations_LowerExpectations() {
	exp := expectations.New[types.NamespacedName]()
	key := types.NamespacedName{Namespace: "default", Name: "web"}

	exp.ExpectCreations(key, 3)
	exp.CreationObserved(key)
	exp.CreationObserved(key)
	exp.LowerExpectations(key, 1, 0) // the third create returned an error
	fmt.Println(exp.Satisfied(key))
	// Output: true
}

// A graceful deletion is seen twice (deletionTimestamp set, then the delete event); tracking
// by UID counts it once.
func ExampleUIDTracking() {
	exp := expectations.NewUIDTracking[string]()
	key := "default/web"

	exp.ExpectDeletions(key, []types.UID{"pod-a-uid", "pod-b-uid"})
	exp.DeletionObserved(key, "pod-a-uid") // update with deletionTimestamp
	exp.DeletionObserved(key, "pod-a-uid") // the delete event
	_, del, _ := exp.Get(key)
	fmt.Println("pending deletions:", del, "satisfied:", exp.Satisfied(key))

	exp.DeletionObserved(key, "pod-b-uid")
	fmt.Println("satisfied:", exp.Satisfied(key))
	// Output:
	// pending deletions: 1 satisfied: false
	// satisfied: true
}
