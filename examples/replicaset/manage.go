package main

import (
	"context"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/ownerref"
	"github.com/ctrlkit/ctrlkit/replicas"
	"github.com/ctrlkit/ctrlkit/sharding"
)

// The reasons of the events recorded on a ReplicaSet, kube-controller-manager's (its
// controller_utils.go): a Pod created or deleted (Normal), a create or delete refused (Warning).
// FailedCreate and FailedDelete are also the reasons of the ReplicaFailure condition.
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonFailedCreate     = "FailedCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonFailedDelete     = "FailedDelete"
)

// manageReplicas creates or deletes Pods to bring len(pods) to spec.replicas, as
// kube-controller-manager's manageReplicas does: creates in slow-start batches, deletes all at
// once. Expectations are set before the first request (the informer may deliver a new Pod
// before Create even returns) and lowered for every request that will produce no event.
func (c *ReplicaSetController) manageReplicas(ctx context.Context, key controller.Key, rs *appsv1.ReplicaSet, pods []*corev1.Pod) error {
	logger := klog.FromContext(ctx)
	want := int(ptrOr(rs.Spec.Replicas, 1))
	diff := len(pods) - want
	switch {
	case diff < 0:
		n := min(-diff, c.burst)
		batch := replicas.SlowStartInitialBatchSize
		if c.gate != nil && !c.gate.Enabled(ReplicaSetSlowStartBatching) {
			batch = n // one batch: everything at once
		}
		c.exp.ExpectCreations(key, n)
		logger.Info("Too few replicas, creating pods", "have", len(pods), "want", want, "creating", n)
		ok, err := replicas.SlowStartBatch(ctx, n, batch, func() error {
			pod, err := c.client.CoreV1().Pods(rs.Namespace).Create(ctx, newPod(rs), metav1.CreateOptions{})
			switch {
			case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
				// The namespace and this ReplicaSet are going away: no error of this sync,
				// but no Pod event will come either (and, as upstream, no Event is recorded).
				c.exp.LowerExpectations(key, 1, 0)
				return nil
			case err != nil:
				c.recorder.Eventf(rs, corev1.EventTypeWarning, ReasonFailedCreate, "Error creating: %v", err)
				return err
			}
			c.recorder.Eventf(rs, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created pod: %s", pod.Name)
			return nil
		})
		if skipped := n - ok; skipped > 0 {
			// Failed or never sent: no event will come for these.
			logger.V(2).Info("Lowering expectations for pods not created", "skipped", skipped)
			c.exp.LowerExpectations(key, skipped, 0)
		}
		return err
	case diff > 0:
		related, err := c.relatedPods(rs, pods)
		if err != nil {
			// Only the spreading suffers: rank by its own Pods, as upstream goes on too.
			logger.Error(err, "Listing the Pods of related ReplicaSets")
			related = pods
		}
		victims := replicas.PodsToDelete(pods, related, min(diff, c.burst), c.clock.Now())
		uids := make([]types.UID, len(victims))
		for i, p := range victims {
			uids[i] = p.UID
		}
		c.exp.ExpectDeletions(key, uids)
		logger.Info("Too many replicas, deleting pods", "have", len(pods), "want", want, "deleting", len(victims))
		return replicas.InParallel(victims, 0, func(p *corev1.Pod) error {
			err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
			if err == nil {
				c.recorder.Eventf(rs, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted pod: %s", p.Name)
				return nil
			}
			// No delete event will come for this UID (NotFound: it came already, or is on its
			// way; either way observing it twice is harmless).
			c.exp.DeletionObserved(key, p.UID)
			if apierrors.IsNotFound(err) {
				return nil
			}
			logger.V(2).Info("Failed to delete pod, lowered expectations", "pod", klog.KObj(p), "err", err)
			c.recorder.Eventf(rs, corev1.EventTypeWarning, ReasonFailedDelete, "Error deleting: %v", err)
			return err
		})
	}
	return nil
}

// relatedPods returns the Pods that PodsToDelete counts per node to spread the survivors: as
// kube-controller-manager's getIndirectlyRelatedPods, those of every ReplicaSet controlled by
// rs's controller (a Deployment's old and new ReplicaSets, rs among them), so that scaling one
// down also thins out the nodes the others crowd. A ReplicaSet without a controller has only
// its own Pods (upstream ranks none then, and logs an error).
func (c *ReplicaSetController) relatedPods(rs *appsv1.ReplicaSet, own []*corev1.Pod) ([]*corev1.Pod, error) {
	ref := metav1.GetControllerOf(rs)
	if ref == nil {
		return own, nil
	}
	rss, err := c.rss.Lister().Namespace(rs.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var related []*corev1.Pod
	seen := map[types.UID]bool{}
	for _, other := range rss {
		if o := metav1.GetControllerOf(other); o == nil || o.UID != ref.UID {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(other.Spec.Selector)
		if err != nil || sel.Empty() {
			continue // selects nothing (the API server refuses both)
		}
		pods, err := c.pods.Lister().Namespace(rs.Namespace).List(sel)
		if err != nil {
			return nil, err
		}
		for _, p := range pods {
			if !seen[p.UID] {
				seen[p.UID] = true
				related = append(related, p)
			}
		}
	}
	return related, nil
}

// newPod is the Pod rs's template describes, controlled by rs. Run sharded (--sharded), it
// carries rs's assignment label (sharding.Inherit), so it is in the cache of rs's member from
// its first event instead of after the sharder labelled it; unsharded, rs has no such label.
func newPod(rs *appsv1.ReplicaSet) *corev1.Pod {
	t := rs.Spec.Template
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    rs.Name + "-",
			Namespace:       rs.Namespace,
			Labels:          maps.Clone(t.Labels),
			Annotations:     maps.Clone(t.Annotations),
			Finalizers:      slices.Clone(t.Finalizers),
			OwnerReferences: []metav1.OwnerReference{*ownerref.NewControllerRef(rs, rsKind)},
		},
		Spec: *t.Spec.DeepCopy(),
	}
	sharding.Inherit(rs, pod)
	return pod
}

// discardRecorder is the recorder of a controller built without one.
type discardRecorder struct{}

func (discardRecorder) Event(runtime.Object, string, string, string)          {}
func (discardRecorder) Eventf(runtime.Object, string, string, string, ...any) {}
func (discardRecorder) AnnotatedEventf(runtime.Object, map[string]string, string, string, string, ...any) {
}
