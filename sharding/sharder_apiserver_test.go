package sharding_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"

	"github.com/ctrlkit/ctrlkit/sharding"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// idle is a Runnable with nothing to do but wait for the end of the membership.
type idle struct{}

func (idle) Run(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// Two processes of one identity (two replicas given one --shard-identity, or defaulting to
// one host name; a StatefulSet Pod restarted while its former process still runs behind a
// partition) never both lead the sharder, on a real API server. Before, the sharder's Lease
// holder was the bare identity: the second process's elector read its own identity in the
// Lease, renewed it, and both sharded until the duplicate-identity check stopped the second
// (issue 28: both logged "Leading the ring: sharding" for about 4 s). Now the holder carries a
// per-process suffix, as the member Lease's does: the second waits for the Lease, and the
// duplicate-identity check still stops it.
func TestSharderNeverLedByTwoProcessesOfOneIdentity(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	meta, err := metadata.NewForConfig(env.Config())
	require.NoError(t, err)
	cfg := sharding.Config{Ring: ringName, Namespace: env.Namespace(), Identity: "a",
		LeaseDuration: testLeaseDuration, RenewDeadline: testRenewDeadline, RetryPeriod: testRetryPeriod}

	type process struct {
		sharder *sharding.Sharder
		member  *sharding.Member
		cancel  context.CancelFunc
		done    chan struct{}
		err     error // the group's, once done is closed
	}
	start := func(name string) *process {
		m, err := sharding.NewMember(env.Client(), cfg, sharding.MemberOptions{})
		require.NoError(t, err)
		sh, err := sharding.NewSharder(env.Client(), meta, cfg, sharding.SharderOptions{Resource: configMaps, Namespace: env.Namespace()})
		require.NoError(t, err)
		g, err := sharding.NewGroup(name, m, sh, nil, idle{})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(env.Context())
		p := &process{sharder: sh, member: m, cancel: cancel, done: make(chan struct{})}
		go func() {
			defer close(p.done)
			p.err = g.Run(ctx)
		}()
		t.Cleanup(func() {
			cancel()
			<-p.done
		})
		return p
	}

	first := start("first")
	require.Eventually(t, first.sharder.IsLeader, 30*time.Second, 10*time.Millisecond, "the first process leads the sharder")
	// And holds the member Lease: the sharder's election and the member's run side by side,
	// so on a loaded machine the second process's member could otherwise take the member
	// Lease first and the first would be the one stopped as the duplicate.
	require.Eventually(t, first.member.IsMember, 30*time.Second, 10*time.Millisecond, "the first process is a member")
	lease, err := env.Client().CoordinationV1().Leases(env.Namespace()).Get(env.Context(), ringName+"-sharder", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, lease.Spec.HolderIdentity)
	assert.Regexp(t, `^a_[0-9a-f]{12}$`, *lease.Spec.HolderIdentity, "the sharder's holder is the identity and a per-process suffix")
	assert.Equal(t, first.sharder.Holder(), *lease.Spec.HolderIdentity)
	assert.Equal(t, "a", sharding.IdentityOfHolder(*lease.Spec.HolderIdentity))

	// Watch both sharders from the second's start until its duplicate-identity check stops it.
	second := start("second")
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(time.Minute)
	samples, both, secondLed := 0, 0, 0
watch:
	for {
		select {
		case <-second.done:
			break watch
		case <-first.done:
			require.FailNow(t, "the first process stopped instead of the second", "%v", first.err)
		case <-deadline:
			require.FailNow(t, "the second process of identity a was not stopped as a duplicate")
		case <-tick.C:
		}
		a, b := first.sharder.IsLeader(), second.sharder.IsLeader()
		samples++
		if b {
			secondLed++
		}
		if a && b {
			both++
		}
	}
	require.ErrorAs(t, second.err, new(*sharding.DuplicateIdentityError))
	t.Logf("%d samples over the second process's life: it led the sharder in %d, both did in %d", samples, secondLed, both)
	assert.Zero(t, both, "two processes of one identity led the sharder at once")
	assert.Zero(t, secondLed, "the second process took the sharder Lease the first holds")
	assert.True(t, first.sharder.IsLeader(), "the first process still leads")
}
