package main

import "github.com/ctrlkit/ctrlkit/featuregate"

// ReplicaSetSlowStartBatching makes the controller create Pods in batches of 1, 2, 4, ...
// (replicas.SlowStartBatch), stopping at the first batch with a failure, so a quota or
// admission problem costs one failed request instead of hundreds. Off, every missing Pod is
// requested at once. Deletes are sent all at once either way, as kube-controller-manager
// sends them. Beta and on by default: kube-controller-manager has always batched its creates.
const ReplicaSetSlowStartBatching featuregate.Feature = "ReplicaSetSlowStartBatching"

// features are this controller's feature gates.
var features = map[featuregate.Feature]featuregate.FeatureSpec{
	ReplicaSetSlowStartBatching: {Default: true, PreRelease: featuregate.Beta},
}

// AddFeatures registers this controller's feature gates in gate. Call it before the
// --feature-gates flag is registered.
func AddFeatures(gate *featuregate.Gate) error { return gate.Add(features) }
