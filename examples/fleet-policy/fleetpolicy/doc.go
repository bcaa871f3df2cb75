// Package fleetpolicy is a controller a fleet operator copies: one
// controller over every cluster a multicluster.Fleet engages, which keeps a
// baseline ConfigMap, whose content lives in the hub, in every namespace of
// every cluster labelled fleet.ctrlkit.dev/baseline=true.
//
// It shows the multi-cluster pattern:
//
//   - keys carry the cluster (multicluster.Key): the key of a labelled
//     Namespace in cluster "east" is {Cluster: "east", Name: "team-a"};
//   - per-cluster wiring: Namespaces (multicluster.Watch) and the baseline
//     ConfigMaps they own (multicluster.Owns, a cluster-scoped owner of a
//     namespaced child), the ConfigMaps narrowed by a label so that a
//     cluster's cache holds only those the controller writes;
//   - a hub watch beside them: the source ConfigMap in the hub maps to
//     every labelled Namespace of every engaged cluster, so one edit in the
//     hub reaches the whole fleet;
//   - level-triggered: Reconcile compares the cluster's cached ConfigMap with
//     the hub's source and creates or updates the difference, and deletes
//     the ConfigMap of a Namespace that is no longer labelled.
//
// # Use
//
//	fleet, _ := multicluster.New(multicluster.Options{Provider: &multicluster.Secrets{Client: hub, Namespace: "fleet-system"}})
//	c, _ := fleetpolicy.New(mgr.Factory(), fleet, fleetpolicy.Options{SourceNamespace: "fleet-system"})
//	_ = mgr.Add(fleet)
//	_ = mgr.Add(c)
package fleetpolicy
