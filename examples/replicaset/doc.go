// Command replicaset is a complete ReplicaSet controller for apps/v1 ReplicaSets, built the way
// kube-controller-manager builds its own: shared informers, expectations, adoption and release
// by controller reference, slow-start batches, status updates, leader election, a feature gate,
// health probes and Prometheus metrics.
//
// Without --kubeconfig (and without $KUBECONFIG) it runs a scripted demo on an in-memory
// cluster with a simulated kubelet, and exits 0 once every step converged (1 if one did not
// within --timeout):
//
//	go run ./examples/replicaset
//
// With --kubeconfig it runs against that cluster until interrupted. Do not run it next to
// kube-controller-manager's own ReplicaSet controller: two controllers would fight over the
// same Pods.
//
// With --sharded (shorthand for --shard-ring=replicasets; --shard-identity defaults to
// $POD_NAME, else the host name) several replicas split the ReplicaSets between them instead
// of one leader syncing them all: each caches and syncs only the ReplicaSets labelled with its
// identity, and their Pods, which inherit the label when created (package sharding). It needs
// deploy/sharding.yaml next to deploy/rbac.yaml and refuses the in-memory cluster.
//
// # Reading it
//
//   - controller.go: the controller. NewReplicaSetController wires informers and handlers
//     (read its type's comment first: it says why each piece exists), Reconcile is the sync.
//   - manage.go: manageReplicas creates and deletes with the helpers of package replicas
//     (slow-start batches for creates, parallel deletes, which Pods a scale-down deletes
//     first), and records each as an event on the ReplicaSet (SuccessfulCreate,
//     FailedCreate, SuccessfulDelete, FailedDelete) as kube-controller-manager does.
//   - status.go: the status a sync computes, and the write that happens only on change.
//   - features.go: the ReplicaSetSlowStartBatching gate.
//   - main.go: flags, the choice of cluster, the Manager (leader election, gates, probes,
//     metrics); demo.go: the in-memory cluster's seed objects and scripted demo.
//
// Run it with -v=2 to see why each sync runs: a "Reconciling" line names the events (which
// ReplicaSet or Pod, add, update or delete), retries and requeues merged into it while it
// waited (controller.Options.Provenance; the handlers name their events with
// EnqueueWithTrigger).
//
// A sync that keeps failing (a Pod create refused) is retried with backoff, then every 5
// minutes until it succeeds (controller.Options.Retry's default): a ReplicaSet is never left
// short of Pods after the cause is fixed, even without an edit of it.
//
// Copying it for your own kind of children: keep the handler structure (observe expectations
// and enqueue in the same handler), the claim before acting, and the rule that a sync acts only
// when its expectations are satisfied.
package main
