package multicluster_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/multicluster"
	"github.com/ctrlkit/ctrlkit/sharding"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// A replica killed while it held a cluster leaves that cluster's claim
// Lease behind; if the cluster has left the Provider meanwhile, no replica
// takes the claim over, and a surviving member deletes it once the killed
// member's Lease is seen expired. The claim of a live member for a cluster
// another replica is not offered stays. Against kube-apiserver, which holds
// the Leases.
func TestClaimsOfClustersNoLongerOfferedAreSweptAPIServer(t *testing.T) {
	hub := testkit.NewAPIServer(t)
	ctx := context.Background()
	ns := hub.Namespace()
	// Identities for which the ring gives "kept" to live and "gone" to dead, among
	// every set of members the test has: each replica is offered only its own cluster.
	owner := func(cluster string, members ...string) string {
		return sharding.NewRing("fleet", members).Owner(cluster)
	}
	dead, survivor := "", ""
	for i := 0; dead == "" || survivor == ""; i++ {
		cand := "r" + strconv.Itoa(i)
		if dead == "" && owner("gone", "live", cand) == cand && owner("kept", "live", cand) == "live" {
			dead = cand
			continue
		}
		if dead != "" && owner("kept", "live", cand) == "live" && owner("kept", "live", dead, cand) == "live" {
			survivor = cand
		}
	}
	start := func(identity string, cfg *rest.Config, conns map[string]multicluster.Connection) (*multicluster.Fleet, func()) {
		client, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		fleet, err := multicluster.New(multicluster.Options{Provider: multicluster.NewList(conns), Sharding: &multicluster.Sharding{
			Client: client,
			Config: sharding.Config{Ring: "fleet", Namespace: ns, Identity: identity,
				LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 250 * time.Millisecond},
		}})
		require.NoError(t, err)
		rctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { assert.NoError(t, fleet.Run(rctx)) })
		var once sync.Once
		stop := func() { once.Do(func() { cancel(); wg.Wait() }) }
		t.Cleanup(stop)
		return fleet, stop
	}
	claimOf := func(cluster string) *coordinationv1.Lease {
		leases, err := hub.Client().CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{LabelSelector: "multicluster.ctrlkit.dev/ring=fleet"})
		require.NoError(t, err)
		for i := range leases.Items {
			if leases.Items[i].Annotations["multicluster.ctrlkit.dev/cluster"] == cluster {
				return &leases.Items[i]
			}
		}
		return nil
	}
	gone, _ := fake(t)
	kept, _ := fake(t)

	liveFleet, _ := start("live", hub.Config(), map[string]multicluster.Connection{"kept": kept})
	require.Eventually(t, func() bool { return len(liveFleet.Clusters()) == 1 }, wait, pollEvery, "live engages kept")
	outage := testkit.NewOutage(t, hub.Config())
	deadFleet, kill := start(dead, outage.Config(), map[string]multicluster.Connection{"gone": gone})
	require.Eventually(t, func() bool { return len(deadFleet.Clusters()) == 1 && claimOf("gone") != nil }, wait, pollEvery, "dead claims and engages gone")

	// The kill: cut off from the hub, the replica can neither renew its Lease nor delete
	// its claim; it is stopped before it could.
	outage.Cut()
	require.Eventually(t, func() bool { return len(deadFleet.Clusters()) == 0 }, wait, pollEvery, "cut off, it disengages")
	kill()
	require.NotNil(t, claimOf("gone"), "the killed replica's claim is left behind")

	_, _ = start(survivor, hub.Config(), map[string]multicluster.Connection{})
	require.Eventually(t, func() bool { return claimOf("gone") == nil }, wait, pollEvery, "the claim of the killed member, for a cluster nobody is offered, is swept")
	claim := claimOf("kept")
	require.NotNil(t, claim, "the live member's claim stays, though the survivor is not offered its cluster")
	assert.Equal(t, []string{"kept"}, liveFleet.Clusters())
	assert.Equal(t, "live", sharding.IdentityOfHolder(*claim.Spec.HolderIdentity))
}
