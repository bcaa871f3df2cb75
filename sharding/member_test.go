package sharding_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/sharding"
	"github.com/ctrlkit/ctrlkit/testkit"
)

func memberConfig(id string) sharding.Config {
	return sharding.Config{Ring: ringName, Namespace: "default", Identity: id,
		LeaseDuration: testLeaseDuration, RenewDeadline: testRenewDeadline, RetryPeriod: testRetryPeriod}
}

// A member labels a Lease it finds without the ring's label, holds it while
// its work runs, and releases it after the work returned.
func TestMemberHoldsAndReleasesItsLease(t *testing.T) {
	env := testkit.NewFake(t, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: ringName + ".a"}})
	m, err := sharding.NewMember(env.Client(), memberConfig("a"), sharding.MemberOptions{})
	require.NoError(t, err)
	assert.Equal(t, sharding.Label(ringName)+"=a", m.Selector())
	require.ErrorIs(t, m.Check(nil), sharding.ErrNotMember)
	ctx, cancel := context.WithCancel(env.Context())
	worked, workDone := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- m.Run(ctx, func(ctx context.Context) {
			close(worked)
			<-ctx.Done()
			close(workDone)
		})
	}()
	select {
	case <-worked:
	case <-time.After(10 * time.Second):
		t.Fatal("the member did not join")
	}
	<-m.Joined()
	assert.True(t, m.IsMember())
	assert.NoError(t, m.Check(nil))
	lease, err := env.Client().CoordinationV1().Leases("default").Get(ctx, ringName+".a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, ringName, lease.Labels[sharding.RingLabel])
	require.NotNil(t, lease.Spec.HolderIdentity)
	assert.Regexp(t, `^a_[0-9a-f]{12}$`, *lease.Spec.HolderIdentity)

	cancel()
	require.NoError(t, <-done)
	select {
	case <-workDone:
	default:
		t.Fatal("Run returned before its work")
	}
	lease, err = env.Client().CoordinationV1().Leases("default").Get(context.Background(), ringName+".a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, *lease.Spec.HolderIdentity, "released after the work returned")
	assert.False(t, m.IsMember())
	assert.ErrorContains(t, m.Check(nil), `not a member of the ring "cms": Lease default/cms.a not held by a_`)
}

// A second live process with the same identity never joins: it reports
// the holder instead of waiting forever.
func TestMemberRefusesADuplicateIdentity(t *testing.T) {
	env := testkit.NewFake(t)
	first, err := sharding.NewMember(env.Client(), memberConfig("a"), sharding.MemberOptions{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(env.Context())
	firstDone := make(chan error, 1)
	go func() { firstDone <- first.Run(ctx, func(ctx context.Context) { <-ctx.Done() }) }()
	t.Cleanup(func() { cancel(); <-firstDone })
	<-first.Joined()

	clk := testingclock.NewFakeClock(time.Now())
	second, err := sharding.NewMember(env.Client(), memberConfig("a"), sharding.MemberOptions{Clock: clk})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		done <- second.Run(env.Context(), func(context.Context) { t.Error("the duplicate joined") })
	}()
	// Step the duplicate's clock: each step is one more read of the Lease,
	// and the first process renews it in between.
	require.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond)
	var dup *sharding.DuplicateIdentityError
	require.Eventually(t, func() bool {
		clk.Step(time.Second)
		select {
		case err := <-done:
			require.True(t, errors.As(err, &dup), "%v", err)
			return true
		default:
			return false
		}
	}, 20*time.Second, 50*time.Millisecond)
	assert.ErrorAs(t, dup, new(*sharding.DuplicateIdentityError))
	assert.Equal(t, "a", dup.Identity)
	assert.Contains(t, dup.Error(), `identity "a"`)
}

// A former process of the same identity that crashed holds the Lease
// without renewing it: however long the member's clock runs (here far past
// the two lease durations after which the first draft reported any other
// holder, as it did after a partition at start-up), it is waited out, and
// the member joins once the Lease has expired.
func TestMemberWaitsOutACrashedFormerProcess(t *testing.T) {
	renewed := metav1.NewMicroTime(time.Now())
	env := testkit.NewFake(t, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: ringName + ".a", Labels: map[string]string{sharding.RingLabel: ringName}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptrTo("a_crashed"), LeaseDurationSeconds: ptrTo(int32(2)),
			AcquireTime: &renewed, RenewTime: &renewed}})
	clk := testingclock.NewFakeClock(time.Now())
	m, err := sharding.NewMember(env.Client(), memberConfig("a"), sharding.MemberOptions{Clock: clk})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(env.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, func(ctx context.Context) { <-ctx.Done() }) }()
	require.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond)
	var early error
	require.Eventually(t, func() bool {
		clk.Step(time.Second)
		select {
		case early = <-done:
			return true
		case <-m.Joined():
			return true
		default:
			return false
		}
	}, 20*time.Second, 20*time.Millisecond)
	require.NoError(t, early, "Run ended before joining")
	assert.True(t, m.IsMember())
	cancel()
	require.NoError(t, <-done)
}

func TestNewMemberAndSharderRejectBadInput(t *testing.T) {
	env := testkit.NewFake(t)
	_, err := sharding.NewMember(env.Client(), sharding.Config{Ring: "Bad_Ring", Identity: "a"}, sharding.MemberOptions{})
	assert.ErrorIs(t, err, sharding.ErrInvalidConfig)
	_, err = sharding.NewMember(nil, memberConfig("a"), sharding.MemberOptions{})
	assert.ErrorIs(t, err, sharding.ErrInvalidConfig)
	meta := env.Metadata()
	_, err = sharding.NewSharder(env.Client(), meta, memberConfig("a"), sharding.SharderOptions{})
	assert.ErrorIs(t, err, sharding.ErrInvalidConfig, "no resource")
	_, err = sharding.NewSharder(env.Client(), meta, memberConfig("a"), sharding.SharderOptions{Resource: configMaps, Children: []schema.GroupVersionResource{configMaps}})
	assert.ErrorIs(t, err, sharding.ErrInvalidConfig, "a child that is the resource")
	_, err = sharding.NewSharder(env.Client(), meta, memberConfig("a"), sharding.SharderOptions{
		Resource: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, Children: []schema.GroupVersionResource{configMaps}})
	assert.ErrorContains(t, err, "set SharderOptions.Kind")
	_, err = sharding.NewSharder(env.Client(), nil, memberConfig("a"), sharding.SharderOptions{Resource: configMaps})
	assert.ErrorIs(t, err, sharding.ErrInvalidConfig, "no metadata client")
}

// A runnable that fails ends the group with its error, after the member's
// Lease was released; a group runs once.
func TestGroupEndsWithAFailingRunnable(t *testing.T) {
	env := testkit.NewFake(t)
	cfg := memberConfig("a")
	m, err := sharding.NewMember(env.Client(), cfg, sharding.MemberOptions{})
	require.NoError(t, err)
	sh, err := sharding.NewSharder(env.Client(), env.Metadata(), cfg, sharding.SharderOptions{Resource: configMaps})
	require.NoError(t, err)
	boom := errors.New("boom")
	g, err := sharding.NewGroup("g", m, sh, nil, runnableFunc(func(ctx context.Context) error { return boom }))
	require.NoError(t, err)
	assert.False(t, g.NeedLeaderElection())
	assert.Equal(t, "g", g.Name())
	err = g.Run(env.Context())
	require.ErrorIs(t, err, boom)
	lease, err := env.Client().CoordinationV1().Leases("default").Get(context.Background(), ringName+".a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, *lease.Spec.HolderIdentity, "released")
	assert.ErrorContains(t, g.Run(env.Context()), "group already ran")

	_, err = sharding.NewGroup("", m, sh, nil)
	assert.ErrorIs(t, err, sharding.ErrInvalidConfig)
	_, err = sharding.NewGroup("g", m, sh, nil, nil)
	assert.ErrorIs(t, err, sharding.ErrInvalidConfig)
}

type runnableFunc func(ctx context.Context) error

func (f runnableFunc) Run(ctx context.Context) error { return f(ctx) }
