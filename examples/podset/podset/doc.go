// Package podset is a complete controller for a custom resource: it keeps the Pods of every
// PodSet (podsets.examples.ctrlkit.dev/v1alpha1, see ../api/v1alpha1) at spec.replicas, the way
// kube-controller-manager's ReplicaSet controller keeps a ReplicaSet's. Copy it as the start of
// your own CRD controller: everything ctrlkit offers for built-in types is used here, typed,
// for a custom type, with no code generator beyond deepcopy.
//
// # What it uses, and why
//
//   - One informer factory, two caches: PodSets through informer.ForResource on the dynamic
//     client (objects converted to *v1alpha1.PodSet once, on entry to the cache) and Pods
//     through informer.For. Reads come from the caches; writes go to the API server.
//   - The typed custom resource client (customresource.Client) for the two things a cache
//     cannot do: an uncached GET of the owner before adopting, and status writes through the
//     /status subresource.
//   - Expectations (expectations.UIDTracking): before creating or deleting Pods, Reconcile
//     records how many events it expects; the Pod handler counts them down; until they have
//     arrived, Reconcile does not create or delete again. A slow watch therefore never causes
//     duplicate Pods. Deletions are tracked by Pod UID, so a graceful deletion (an update with
//     deletionTimestamp, then the delete) counts once.
//   - Claims (ownerref.Claimer): each Reconcile adopts orphan Pods its selector matches and
//     releases Pods that stopped matching, so two PodSets with overlapping selectors never
//     fight. Adoption first re-reads the PodSet uncached (ownerref.RecheckOwner), because the
//     cache may not have seen that it is being deleted. Claims are JSON merge patches
//     (ClaimPatchType), which work for custom resource children too.
//   - The replica helpers of package replicas, as kube-controller-manager's ReplicaSet
//     controller has them: only active Pods count (replicas.FilterActivePods); creates go in
//     slow-start batches (replicas.SlowStartBatch: a quota that refuses every Pod costs one
//     request per pass, not hundreds); deletes go all at once (replicas.InParallel) and take
//     the Pods whose loss hurts least first (replicas.PodsToDelete: unscheduled, pending, not
//     ready, then from the nodes holding most of the PodSet's Pods, then the youngest).
//   - Status through the subresource, written only when it changed: replicas, readyReplicas,
//     observedGeneration and the conditions Available and ReplicaFailure, each with the
//     generation it describes.
//   - Events on the PodSet (SuccessfulCreate, FailedCreate, SuccessfulDelete, FailedDelete,
//     InvalidSpec, Undecodable) through the record.EventRecorder of the Manager: for a custom
//     resource, status and events are all a user sees.
//
// # Deletion without a finalizer
//
// Every Pod created (or adopted) gets a controller owner reference to its PodSet with
// blockOwnerDeletion set. Deleting the PodSet lets the garbage collector of
// kube-controller-manager delete its Pods: in the background by default, or before the PodSet
// disappears with propagationPolicy Foreground (the PodSet then lingers with a
// deletionTimestamp, and this controller creates nothing for it meanwhile). The controller
// holds no external state, so it needs no finalizer and deleting a PodSet never hangs on it.
// Where no garbage collector runs (the in-memory demo, a bare API server in tests) the Pods
// stay behind, and the controller — which reconciles PodSets, not Pods — leaves them alone.
//
// # Objects that do not decode
//
// The CRD schema is the first line of defence, but a PodSet written before a schema change,
// or with preserved unknown fields, can still fail to convert to the Go type. The informer
// reports it (with its key) and keeps it in the cache unconverted; Reconcile records an
// Undecodable event on it and does not retry; every other PodSet goes on converging. The next
// version of the object is converted and reconciled as usual.
//
// # Use
//
//	factory := informer.NewFactory(client, informer.Options{DynamicClient: dyn})
//	mgr, err := manager.New(manager.Options{Client: client, Factory: factory, Scheme: scheme})
//	...
//	c, err := podset.New(factory, client, dyn, podset.Options{Recorder: mgr.EventRecorderFor(podset.Name)})
//	...
//	_ = mgr.Add(c)
//	err = mgr.Start(ctx)
//
// The scheme should know v1alpha1 (v1alpha1.AddToScheme) so events can name PodSets; see
// ../main.go for the whole program, on a real cluster or an in-memory one.
package podset
