package multicluster_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/multicluster"
	"github.com/ctrlkit/ctrlkit/sharding"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// Replicas of unequal size share clusters by weight: each holds exactly the
// clusters the weighted ring gives it, a replica of weight 3 about three
// times those of one of weight 1. Against kube-apiserver, where the member
// Leases publish the weights.
func TestShardedFleetSharesClustersByWeightAPIServer(t *testing.T) {
	hub := testkit.NewAPIServer(t)
	const n = 80
	conns := map[string]multicluster.Connection{}
	var names []string
	for i := range n {
		name := fmt.Sprintf("c%02d", i)
		conns[name], _ = fake(t)
		names = append(names, name)
	}
	weights := map[string]int{"small": 1, "large": 3}
	fleets := map[string]*multicluster.Fleet{}
	for identity, w := range weights {
		client, err := kubernetes.NewForConfig(hub.Config())
		require.NoError(t, err)
		fleet, err := multicluster.New(multicluster.Options{Provider: multicluster.NewList(conns), Sharding: &multicluster.Sharding{
			Client: client,
			Config: sharding.Config{Ring: "fleet", Namespace: hub.Namespace(), Identity: identity, Weight: w,
				LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 250 * time.Millisecond},
		}})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { assert.NoError(t, fleet.Run(ctx)) })
		t.Cleanup(func() { cancel(); wg.Wait() })
		fleets[identity] = fleet
	}
	ring := sharding.NewWeightedRing("fleet", weights)
	want := map[string][]string{}
	for _, name := range names {
		want[ring.Owner(name)] = append(want[ring.Owner(name)], name)
	}
	require.Eventually(t, func() bool {
		for identity, fleet := range fleets {
			if !slices.Equal(fleet.Clusters(), want[identity]) {
				return false
			}
		}
		return true
	}, wait, pollEvery, "each replica holds the clusters the weighted ring gives it")
	t.Logf("weight 1: %d clusters, weight 3: %d", len(want["small"]), len(want["large"]))
	assert.Greater(t, len(want["large"]), 2*len(want["small"]), "the replica of weight 3 holds most")
}
