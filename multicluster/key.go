package multicluster

import "github.com/ctrlkit/ctrlkit/controller"

// Key names an object in one engaged cluster: the K of a controller over a
// Fleet. It is comparable, so the queue deduplicates it per cluster, and its
// embedded controller.Key is what the cluster's listers and clients take.
type Key struct {
	Cluster string
	controller.Key
}

// String returns "cluster/namespace/name", or "cluster/name" for a
// cluster-scoped object: the cluster first, then controller.Key's form.
func (k Key) String() string { return k.Cluster + "/" + k.Key.String() }

// FlowByCluster is the flow of a Key (controller.Options.Flows): its
// cluster, so that the clusters take turns and one with a burst of keys
// cannot starve the others. NewController sets it unless Options.Flows is set.
func FlowByCluster(k Key) string { return k.Cluster }
