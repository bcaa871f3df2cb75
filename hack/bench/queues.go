package bench

import (
	"strconv"

	kworkqueue "k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"

	"github.com/ctrlkit/ctrlkit/workqueue"
)

// Queue is what every queue under test offers: client-go's rate-limiting interface.
type Queue = kworkqueue.TypedRateLimitingInterface[string]

// Impl is one queue implementation under test.
type Impl struct {
	Name string
	New  func() Queue
	// AddPriority adds item at priority prio (0 <= prio < Priorities); nil when the
	// implementation has no priorities.
	AddPriority func(q Queue, prio int, item string)
	// Loop is true when the implementation's own controllers hand an item back and take the
	// next in one step (benchload.WorkerLoop); the controller-loop workloads use it then, and
	// Get+Done otherwise, as each library's controllers do.
	Loop bool
}

// Priorities is how many priorities the priority workloads use.
const Priorities = 4

// crPriorities are controller-runtime's AddOpts.Priority values, allocated once so that the
// benchmark does not charge controller-runtime for allocating an *int per add.
var crPriorities = func() []int {
	p := make([]int, Priorities)
	for i := range p {
		p[i] = i
	}
	return p
}()

// Impls are the implementations, ctrlkit first. None is named, so none reports metrics.
var Impls = []Impl{
	{
		Name: "ctrlkit",
		New:  func() Queue { return workqueue.New[string]() },
		AddPriority: func(q Queue, prio int, item string) {
			q.(*workqueue.Queue[string]).AddWithOpts(workqueue.AddOpts{Priority: prio}, item)
		},
		Loop: true,
	},
	{
		Name: "clientgo",
		New: func() Queue {
			return kworkqueue.NewTypedRateLimitingQueueWithConfig(
				kworkqueue.DefaultTypedControllerRateLimiter[string](),
				kworkqueue.TypedRateLimitingQueueConfig[string]{})
		},
	},
	{
		Name: "controllerruntime",
		New:  func() Queue { return priorityqueue.New[string]("") },
		AddPriority: func(q Queue, prio int, item string) {
			q.(priorityqueue.PriorityQueue[string]).AddWithOpts(priorityqueue.AddOpts{Priority: &crPriorities[prio]}, item)
		},
	},
}

// Keys are controller-like keys ("namespace/name"), as many as a workload cycles through.
func Keys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "namespace-" + strconv.Itoa(i%97) + "/object-" + strconv.Itoa(i)
	}
	return keys
}
