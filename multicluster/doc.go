// Package multicluster runs one controller over many clusters: a Fleet
// engages clusters from a Provider at run time, builds the informers of the
// controllers wired to it in each, and tears them down when the cluster is
// disengaged. There is one queue and one set of workers; keys carry the
// cluster (Key), and the clusters take turns in the queue (FlowByCluster),
// so a cluster with a burst of keys does not starve the quiet ones.
//
//	fleet, _ := multicluster.New(multicluster.Options{Provider: provider})
//	c, _ := multicluster.NewController(fleet, "policy", r, controller.Options[multicluster.Key]{})
//	multicluster.Watch(fleet, c, multicluster.For[*corev1.Namespace](), controller.EnqueueObject)
//	multicluster.Owns(fleet, c, multicluster.For[*corev1.ConfigMap](), multicluster.For[*corev1.Namespace]())
//	mgr.Add(fleet)
//	mgr.Add(c)
//
// A Reconcile finds its cluster with Fleet.Get(key.Cluster) and reads and
// writes through that Cluster's Factory and clients; its logger carries the
// cluster's name.
//
// # Providers
//
// A Provider engages each cluster with a context: the cluster stays engaged
// until that context ends. List is a list of clusters that its owner
// changes (KubeconfigFiles reads one from kubeconfig files); Secrets engages
// the clusters whose kubeconfigs are Secrets in a namespace, the common
// pattern of fleet managers (Cluster API writes one per workload cluster),
// and follows them as they are created, rotated and deleted;
// ClusterProfiles does the same for the cluster inventory API's
// ClusterProfiles (KEP-4322). A Provider of one's own implements Run.
//
// # Lifetimes
//
// Each cluster has its own informer factory (Cluster.Factory), started when
// the cluster is engaged and shut down when it is disengaged: its watches end,
// its goroutines return and its caches are freed; its keys still queued are
// dropped before their Reconcile (the Admission step NewController sets). A
// cluster engaged again under the same name (a rotated credential) replaces
// the old one, which is disengaged first. The controller's watches of a
// cluster are controller.WatchUntil's: the controller does not wait for a
// cluster's caches, so a cluster that cannot be reached holds none of the
// others back. A cluster's own keys wait for them instead: until the
// informers built when it was engaged have synced (lists read after the
// engagement), its keys are held and then queued again, so no Reconcile
// takes the objects of an empty cache for missing (the gate a leader passes
// after winning its Lease, per cluster).
//
// # Health
//
// Each engaged cluster's API server is asked for its version every
// Options.ProbeInterval. Cluster.Err says why a cluster is not ready (no
// answer, a wiring that could not be built there, caches not synced yet);
// Fleet.ReadyNote lists those, and a manager.Manager shows it on
// /readyz?verbose ("[+]synced ok, but: multicluster-fleet: cluster east:
// unreachable: ...") without failing readiness: one cluster down must not
// take the webhooks and the work on every other cluster with it. The
// informers of an unreachable cluster retry with client-go's backoff; when it
// answers again, the connections its outage left dead are closed so its
// watches resume at once, as the Manager does for its own API server.
//
// # Sharding
//
// With Options.Sharding the replicas running a Fleet split its clusters:
// each is a member of a ring (sharding's member Leases), each cluster is
// given to one live member by rendezvous hashing, and a claim Lease per
// cluster keeps it from being engaged by two replicas at once while it moves
// (see Sharding).
//
// # Metrics
//
// With Options.Registerer: ctrlkit_multicluster_clusters (engaged clusters),
// ctrlkit_multicluster_cluster_ready{cluster} (1 ready, 0 not) and
// ctrlkit_multicluster_cache_bytes{cluster}.
// Each cluster's cache memory is its Factory's (Factory.CacheMemory), and
// Options.Cache's memory budgets apply to each cluster alone.
package multicluster
