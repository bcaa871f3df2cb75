// Package replicas holds the helpers of controllers that keep N replicas of Pods, as
// kube-controller-manager's pkg/controller/controller_utils.go and replicaset/replica_set.go
// have them for its ReplicaSet and ReplicationController controllers, which nobody can import.
//
// A replica controller's sync lists the Pods, keeps the active ones, claims those it owns,
// and creates or deletes the difference to spec.replicas. Each helper here is one step:
//
//   - IsPodActive and FilterActivePods (upstream: controller.IsPodActive,
//     controller.FilterActivePods) decide which Pods count as replicas: not finished and not
//     being deleted. A Pod being deleted is replaced at once, without waiting out its grace
//     period.
//   - SlowStartBatch (upstream: slowStartBatch, with controller.SlowStartInitialBatchSize)
//     sends creates in batches of 1, 2, 4, ..., stopping at the first batch with a failure.
//     A namespace out of quota then costs one failed create per sync, not burst-replicas of
//     them (and as many warning events). Its successes tell the caller how far to lower its
//     expectations: the creates that failed or were never sent will never be observed.
//   - InParallel sends deletes the way upstream's manageReplicas does: all at once, each
//     failure lowering its own expectation, no slow start.
//   - PodsToDelete (upstream: getPodsToDelete) chooses which Pods a scale-down deletes:
//     ActivePodsWithRanks (upstream: controller.ActivePodsWithRanks) orders them so that
//     unscheduled, pending, unready, cheap (pod-deletion-cost), doubled-up, recently ready,
//     crash-looping and young Pods go first, comparing ages on a log2 scale as upstream's
//     LogarithmicScaleDown does; PodsRankedByRelatedPodsOnSameNode computes the doubled-up
//     ranks. DeletionCost reads the pod-deletion-cost annotation.
//
// # Using them together
//
// The sync of a ReplicaSet-like controller, with ctrlkit's expectations package:
//
//	pods := replicas.FilterActivePods(all) // then claim them (ownerref)
//	switch diff := len(pods) - want; {
//	case diff < 0:
//		n := min(-diff, burst)
//		exp.ExpectCreations(key, n) // before the first create: its event may come first
//		ok, err := replicas.SlowStartBatch(ctx, n, replicas.SlowStartInitialBatchSize, createOne)
//		exp.LowerExpectations(key, n-ok, 0) // failed or never sent: no event will come
//		return err
//	case diff > 0:
//		victims := replicas.PodsToDelete(pods, related, min(diff, burst), clock.Now())
//		exp.ExpectDeletions(key, uidsOf(victims))
//		return replicas.InParallel(victims, 0, func(p *corev1.Pod) error {
//			err := deleteOne(p)
//			if err != nil {
//				exp.DeletionObserved(key, p.UID) // no event will come (or it came: NotFound)
//			}
//			if apierrors.IsNotFound(err) {
//				return nil // gone already, as wanted
//			}
//			return err
//		})
//	}
//
// examples/replicaset and examples/podset are complete controllers built this way.
//
// # Where ctrlkit differs
//
// SlowStartBatch and InParallel report every failure of a batch in a *BatchError (upstream
// returns the first one), and SlowStartBatch stops between batches when its context is done.
// PodsToDelete does not reorder its input, and orders Pods the ranking cannot tell apart by
// namespace and name, so a scale-down is reproducible. Time is a parameter (now), so tests
// control it with a fake clock. Nothing here reads a feature gate: ActivePodsWithRanks has
// IgnoreDeletionCost for clusters that turned PodDeletionCost off.
//
// The package imports only k8s.io/api and klog: any controller can use it, whatever
// framework runs it.
package replicas
