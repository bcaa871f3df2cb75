package controller

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kworkqueue "k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/predicate"
)

// expRecorder records what ObserveChildren counts.
type expRecorder struct {
	mu  sync.Mutex
	log []string
}

func (e *expRecorder) CreationObserved(owner Key) { e.add("create " + owner.String()) }

func (e *expRecorder) DeletionObserved(owner Key, uid types.UID) {
	e.add("delete " + owner.String() + " " + string(uid))
}

func (e *expRecorder) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.log = append(e.log, s)
}

func (e *expRecorder) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.log
	e.log = nil
	return out
}

func ownerKeyOf(pod *corev1.Pod) (Key, bool) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != rsKind.Kind {
		return Key{}, false
	}
	return Key{Namespace: pod.Namespace, Name: ref.Name}, true
}

// ObserveChildren counts kube-controller-manager's expectations: an add is a creation of its
// owner; a deletion counts by UID whichever event shows it (an add or update with a
// deletionTimestamp, the delete); an update moving a terminating child counts for both owners;
// children of no owner count for nothing.
func TestObserveChildren(t *testing.T) {
	exp := &expRecorder{}
	h := ObserveChildren[*corev1.Pod, Key](exp, ownerKeyOf)
	rsA, rsB := replicaSet("ns", "a"), replicaSet("ns", "b")
	pod := podOf("ns", "p", rsA)
	pod.UID = "uid-p"

	h.HandleAdd(pod, false)
	assert.Equal(t, []string{"create ns/a"}, exp.take())

	updated := pod.DeepCopy()
	updated.ResourceVersion = "2"
	h.HandleUpdate(pod, updated)
	assert.Empty(t, exp.take(), "a live child's update counts for nothing")

	terminating := updated.DeepCopy()
	terminating.DeletionTimestamp = &metav1.Time{}
	h.HandleUpdate(updated, terminating)
	assert.Equal(t, []string{"delete ns/a uid-p"}, exp.take(), "graceful deletion counts when it starts")

	h.HandleDelete(terminating, informer.DeleteInfo{Key: "ns/p"})
	assert.Equal(t, []string{"delete ns/a uid-p"}, exp.take(), "UID tracking makes the second count a no-op")

	h.HandleAdd(terminating, true)
	assert.Equal(t, []string{"delete ns/a uid-p"}, exp.take(), "first seen terminating: a deletion")

	moved := terminating.DeepCopy()
	moved.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(rsB, rsKind)}
	h.HandleUpdate(updated, moved)
	assert.Equal(t, []string{"delete ns/b uid-p", "delete ns/a uid-p"}, exp.take())

	orphan := podOf("ns", "o", nil)
	h.HandleAdd(orphan, false)
	h.HandleDelete(orphan, informer.DeleteInfo{Key: "ns/o"})
	assert.Empty(t, exp.take())
}

// queueSpy is a client-go queue that records, for each add, what the observer had counted by
// then.
type queueSpy struct {
	kworkqueue.TypedRateLimitingInterface[Key]
	exp   *expRecorder
	order []string
}

func (q *queueSpy) Add(k Key) {
	q.order = append(q.order, fmt.Sprintf("add %s after %d", k, len(q.exp.log)))
	q.TypedRateLimitingInterface.Add(k)
}

// An observer runs in the Watch's handler, behind its predicates and before its mapping
// enqueues: when a key is added, its expectations are already counted.
func TestWithObserverRunsBeforeTheMappingBehindThePredicates(t *testing.T) {
	c := newTestController(t)
	inf := &capturingInformer[*corev1.Pod]{gvk: corev1.SchemeGroupVersion.WithKind("Pod")}
	exp := &expRecorder{}
	require.NoError(t, Watch(c, anInformer[*corev1.Pod](inf), func(p *corev1.Pod) []Key {
		if k, ok := ownerKeyOf(p); ok {
			return []Key{k}
		}
		return nil
	},
		WithPredicates(predicate.ResourceVersionChanged[*corev1.Pod]()),
		WithObserver(ObserveChildren[*corev1.Pod, Key](exp, ownerKeyOf))))
	spy := &queueSpy{TypedRateLimitingInterface: kworkqueue.NewTypedRateLimitingQueue(kworkqueue.DefaultTypedControllerRateLimiter[Key]()), exp: exp}
	t.Cleanup(spy.ShutDown)
	_, err := c.watches[0].register(adaptQueue[Key](spy, false), false, nil)
	require.NoError(t, err)

	pod := podOf("ns", "p", replicaSet("ns", "a"))
	inf.h.HandleAdd(pod, false)
	assert.Equal(t, []string{"add ns/a after 1"}, spy.order, "the creation was counted before the add")
	inf.h.HandleUpdate(pod, pod)
	assert.Len(t, spy.order, 1, "a resync refused by the predicate is not observed either")
	assert.Len(t, exp.log, 1)
}

// Two Watches of one informer and its write fences share one handler registration, whose
// fan-out feeds every mapping and the fence release.
func TestOneRegistrationPerInformer(t *testing.T) {
	c, err := New("fanout", Reconciler[Key](&keyRecorder{}), Options[Key]{Fences: &Fences{}})
	require.NoError(t, err)
	inf := &capturingInformer[*appsv1.ReplicaSet]{gvk: rsKind}
	require.NoError(t, Watch(c, anInformer[*appsv1.ReplicaSet](inf), EnqueueObject))
	require.NoError(t, Watch(c, anInformer[*appsv1.ReplicaSet](inf), func(rs *appsv1.ReplicaSet) []Key {
		return []Key{{Namespace: "other", Name: rs.Name}}
	}))
	require.NoError(t, FenceOn(c, anInformer[*appsv1.ReplicaSet](inf)))
	require.Len(t, c.watches, 1, "one entry per informer")

	q := kworkqueue.NewTypedRateLimitingQueue(kworkqueue.DefaultTypedControllerRateLimiter[Key]())
	t.Cleanup(q.ShutDown)
	c.cm = (*Metrics)(nil).forController(c.name, 1)
	ft := c.startFences(klog.Background(), adaptQueue[Key](q, false))
	_, err = c.register(adaptQueue[Key](q, false), ft)
	require.NoError(t, err)
	assert.Equal(t, 1, inf.adds, "one AddHandler for both watches and the fences")

	inf.h.HandleAdd(replicaSet("ns", "web"), false)
	assert.Equal(t, 2, q.Len(), "both mappings got the event")
}
