package benchload

import (
	"testing"
	"time"
)

// emptyQueue is a queue with nothing in it.
type emptyQueue struct{}

func (emptyQueue) Get() (string, bool) { return "", true }
func (emptyQueue) Done(string)         {}
func (emptyQueue) Len() int            { return 0 }

// fullQueue is a queue that always has items.
type fullQueue struct{ emptyQueue }

func (fullQueue) Len() int { return 1 }

// A producer held back by a count that drifted past the limit (adds absorbed by deduplication
// are never consumed) is let go once the queue is seen empty twice with no batch produced between, and
// not before.
func TestThrottleUnstickReleasesProducersOfAnEmptyQueue(t *testing.T) {
	th := newThrottle(64)
	th.depth.Store(64) // drifted: nothing is really in flight
	released := make(chan struct{})
	go func() {
		defer close(released)
		th.produced(32)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for th.waiting.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the producer never waited")
		}
		time.Sleep(time.Millisecond)
	}
	th.unstick(fullQueue{})
	select {
	case <-released:
		t.Fatal("a producer was let go while the queue still had items")
	case <-time.After(50 * time.Millisecond):
	}
	th.unstick(emptyQueue{}) // one look: it may be a producer woken but not yet running
	select {
	case <-released:
		t.Fatal("a producer was let go on one look at an empty queue")
	case <-time.After(50 * time.Millisecond):
	}
	th.unstick(emptyQueue{}) // still waiting, no batch produced since: stuck
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("the producer is still waiting on an empty queue")
	}
}
