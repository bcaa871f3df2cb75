package replicas_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/replicas"
)

// Ten creates against a quota that admits three: the batches of 1 and 2 succeed, the batch of
// 4 is refused, and the last three creates are never sent. The caller lowers its expectations
// by the seven creates that will never be observed.
func ExampleSlowStartBatch() {
	quota := int64(3)
	var created atomic.Int64
	ok, err := replicas.SlowStartBatch(context.Background(), 10, replicas.SlowStartInitialBatchSize, func() error {
		if created.Add(1) > quota {
			return errors.New("exceeded quota")
		}
		return nil
	})
	fmt.Println("succeeded:", ok)
	fmt.Println("sent:", created.Load())
	fmt.Println("lower expectations by:", 10-ok)
	fmt.Println(err)
	// Output:
	// succeeded: 3
	// sent: 7
	// lower expectations by: 7
	// 4 of 4 calls failed, the first: exceeded quota
}

// Deletes go out all at once; every one is attempted, and the failures come back together.
func ExampleInParallel() {
	victims := []string{"web-a", "web-b", "web-c"}
	var deleted atomic.Int64
	err := replicas.InParallel(victims, 0, func(name string) error {
		if name == "web-b" {
			return fmt.Errorf("deleting %s: forbidden", name)
		}
		deleted.Add(1)
		return nil
	})
	fmt.Println("deleted:", deleted.Load())
	fmt.Println(err)
	// Output:
	// deleted: 2
	// deleting web-b: forbidden
}

// errors.As finds how many calls of the failed batch there were and what each failure was.
func ExampleBatchError() {
	_, err := replicas.SlowStartBatch(context.Background(), 2, 2, func() error { return errors.New("refused") })
	var be *replicas.BatchError
	if errors.As(err, &be) {
		fmt.Println(len(be.Errs), "of", be.Calls, "failed")
	}
	// Output: 2 of 2 failed
}

func ExampleIsPodActive() {
	running := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	finished := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}
	leaving := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &metav1.Time{Time: time.Now()}}}
	fmt.Println(replicas.IsPodActive(running), replicas.IsPodActive(finished), replicas.IsPodActive(leaving))
	// Output: true false false
}

func ExampleFilterActivePods() {
	pods := []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "running"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}},
		{ObjectMeta: metav1.ObjectMeta{Name: "failed"}, Status: corev1.PodStatus{Phase: corev1.PodFailed}},
		{ObjectMeta: metav1.ObjectMeta{Name: "pending"}, Status: corev1.PodStatus{Phase: corev1.PodPending}},
	}
	for _, p := range replicas.FilterActivePods(pods) {
		fmt.Println(p.Name)
	}
	// Output:
	// running
	// pending
}

// examplePod is a ready, running Pod on node, created and ready at the given time.
func examplePod(name, node string, since time.Time) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(since)},
		Spec:       corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since)},
		}},
	}
}

// A scale-down from 4 to 2: the Pod that is not ready goes first, then one of the two that
// share node-a, although the Pod on node-b is the youngest.
func ExamplePodsToDelete() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	starting := examplePod("starting", "node-c", now.Add(-time.Minute))
	starting.Status.Conditions = nil
	pods := []*corev1.Pod{
		examplePod("a1", "node-a", now.Add(-48*time.Hour)),
		examplePod("a2", "node-a", now.Add(-72*time.Hour)),
		examplePod("b", "node-b", now.Add(-time.Hour)),
		starting,
	}
	for _, p := range replicas.PodsToDelete(pods, pods, 2, now) {
		fmt.Println(p.Name)
	}
	// Output:
	// starting
	// a1
}

// The ranks are the related Pods on each Pod's node: here another ReplicaSet of the same
// Deployment crowds node-a.
func ExamplePodsRankedByRelatedPodsOnSameNode() {
	now := time.Now()
	mine := []*corev1.Pod{examplePod("mine-a", "node-a", now), examplePod("mine-b", "node-b", now)}
	other := []*corev1.Pod{examplePod("other-a1", "node-a", now), examplePod("other-a2", "node-a", now)}
	ranked := replicas.PodsRankedByRelatedPodsOnSameNode(mine, append(other, mine...), now)
	fmt.Println(ranked.Rank)
	// Output: [3 1]
}

// Sorting by hand, for a controller that wants more than PodsToDelete: here with the
// pod-deletion-cost annotation ignored, as on a cluster with the PodDeletionCost gate off.
func ExampleActivePodsWithRanks() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	old := examplePod("old", "node-a", now.Add(-100*time.Hour))
	young := examplePod("young", "node-b", now.Add(-time.Hour))
	young.Annotations = map[string]string{corev1.PodDeletionCost: "1000"}

	s := replicas.ActivePodsWithRanks{Pods: []*corev1.Pod{old, young}, Now: now}
	sort.Stable(s)
	fmt.Println("with the cost:", s.Pods[0].Name)
	s.IgnoreDeletionCost = true
	sort.Stable(s)
	fmt.Println("without:", s.Pods[0].Name)
	// Output:
	// with the cost: old
	// without: young
}

func ExampleDeletionCost() {
	for _, v := range []string{"100", "-5", "007", "+1", "many"} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{corev1.PodDeletionCost: v}}}
		fmt.Printf("%q: %d\n", v, replicas.DeletionCost(p))
	}
	// Output:
	// "100": 100
	// "-5": -5
	// "007": 0
	// "+1": 0
	// "many": 0
}
