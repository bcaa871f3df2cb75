package multicluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/sharding"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// A replica that left the ring (cut off from the hub) and joins again may
// find in its cache a claim naming it that another member took over while
// it was away: its watch, broken by the outage, has not delivered the
// takeover yet. It must not engage that cluster on the stale claim: it writes
// the claim again, preconditioned on the version it read, and engages only
// when that write succeeds. (CI saw two replicas engage the same clusters
// this way when the cut-off replica rejoined.)
func TestKeeperEngagesNoStaleClaimOfItsOwn(t *testing.T) {
	for _, tc := range []struct {
		name      string
		takenOver bool // another member took the claim after the cache read it
	}{
		{"the cache is current", false},
		{"the claim was taken over", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const ns, ring, me = "hub", "fleet", "r2"
			hub, err := fakecluster.New()
			require.NoError(t, err)
			fleet, err := New(Options{Provider: NewList(nil), Sharding: &Sharding{Client: hub.Clientset(),
				Config: sharding.Config{Ring: ring, Namespace: ns, Identity: me}}})
			require.NoError(t, err)
			k := fleet.keeper
			k.holder = me + "_this-process"
			ctx, cancel := context.WithCancel(context.Background())
			fleet.ctx = ctx // as Run sets it
			t.Cleanup(func() { cancel(); fleet.wg.Wait() })

			leases := hub.Clientset().CoordinationV1().Leases(ns)
			now := metav1.NewMicroTime(time.Now())
			_, err = leases.Create(ctx, &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: k.memberLease(me), Labels: map[string]string{sharding.RingLabel: ring}},
				Spec:       coordinationv1.LeaseSpec{HolderIdentity: &k.holder, RenewTime: &now},
			}, metav1.CreateOptions{})
			require.NoError(t, err)
			require.NoError(t, k.createClaim(ctx, "c1"))

			// The cache as the replica rejoins: it read both Leases, then its
			// watch stopped.
			fac := informer.NewFactory(hub.Clientset(), informer.Options{Namespace: ns})
			inf, err := informer.For[*coordinationv1.Lease](fac)
			require.NoError(t, err)
			fac.Start(ctx)
			require.NoError(t, fac.WaitForCacheSync(ctx))
			fac.Shutdown()
			k.leases = inf
			if tc.takenOver {
				claim, err := leases.Get(ctx, k.claimName("c1"), metav1.GetOptions{})
				require.NoError(t, err)
				other := "r0_another-process"
				claim.Spec.HolderIdentity = &other
				_, err = leases.Update(ctx, claim, metav1.UpdateOptions{})
				require.NoError(t, err)
			}
			conn, err := fakecluster.New()
			require.NoError(t, err)
			k.offer(ctx, "c1", Connection{Client: conn.Clientset(), Dynamic: conn.Dynamic(), Metadata: conn.Metadata()})

			err = k.step(ctx)
			if tc.takenOver {
				assert.True(t, apierrors.IsConflict(err), "the stale claim's write conflicts: %v", err)
				assert.Empty(t, fleet.Clusters(), "not engaged over another member's claim")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []string{"c1"}, fleet.Clusters())
			k.release("c1")
		})
	}
}
