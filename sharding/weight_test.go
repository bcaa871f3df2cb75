package sharding

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"
)

// A member of weight w gets about w/W of the keys; all weights 1 is NewRing.
func TestWeightedRingSharesByWeight(t *testing.T) {
	const n = 60000
	ks := keys(n)
	ms := members(3)
	weights := map[string]int{ms[0]: 1, ms[1]: 2, ms[2]: 3}
	r := NewWeightedRing("ring", weights)
	counts := map[string]int{}
	for _, k := range ks {
		counts[r.Owner(k)]++
	}
	for m, w := range weights {
		p := float64(w) / 6
		mean, sd := n*p, math.Sqrt(n*p*(1-p))
		assert.InDelta(t, mean, float64(counts[m]), 5*sd, "%s of weight %d", m, w)
	}

	unit := NewWeightedRing("ring", map[string]int{ms[0]: 1, ms[1]: 0, ms[2]: -3})
	plain := NewRing("ring", ms)
	for _, k := range ks[:2000] {
		require.Equal(t, plain.Owner(k), unit.Owner(k), "weights of 1 (or below) assign as NewRing")
	}
	assert.ElementsMatch(t, ms, unit.Members())
}

// Raising one member's weight moves keys only to it: its share grows from w/W to
// (w+1)/(W+1), here from 1/3 to 1/2.
func TestRaisingAWeightMovesKeysOnlyToThatMember(t *testing.T) {
	const n = 30000
	ks := keys(n)
	ms := members(3)
	before := NewWeightedRing("ring", map[string]int{ms[0]: 1, ms[1]: 1, ms[2]: 1})
	after := NewWeightedRing("ring", map[string]int{ms[0]: 1, ms[1]: 1, ms[2]: 2})
	moved := 0
	for _, k := range ks {
		if b, a := before.Owner(k), after.Owner(k); b != a {
			moved++
			require.Equal(t, ms[2], a, "key %s moved from %s to %s", k, b, a)
		}
	}
	want := float64(n) / 6
	assert.InDelta(t, want, float64(moved), 5*math.Sqrt(want))
}

func TestBalanceSlotsByWeight(t *testing.T) {
	got := balanceSlots(nil, []string{"a", "b"}, map[string]int{"a": 1, "b": 3})
	assert.Equal(t, Slots/4, got["a"].len())
	assert.Equal(t, Slots-Slots/4, got["b"].len())
	assert.Zero(t, got["a"]&got["b"], "no slot given twice")
	// b's weight drops to 1: it gives a the slots a is short of, and keeps the rest.
	again := balanceSlots(got, []string{"a", "b"}, map[string]int{"a": 1, "b": 1})
	assert.Equal(t, Slots/2, again["a"].len())
	assert.Equal(t, Slots/2, again["b"].len())
	assert.Equal(t, got["a"], got["a"]&again["a"], "a keeps its slots")
}

func TestWeightConfigAndLease(t *testing.T) {
	cfg := Config{Ring: "r", Identity: "a", Namespace: "default"}
	assert.Equal(t, 1, cfg.WithDefaults().Weight)
	for _, w := range []int{-1, MaxWeight + 1} {
		cfg.Weight = w
		err := cfg.WithDefaults().Validate()
		var ce *ConfigError
		require.ErrorAs(t, err, &ce, "weight %d", w)
		assert.Equal(t, "weight", ce.Field)
	}

	// The member Lease publishes the weight; a member started again with another weight
	// changes it, and with weight 1 removes it.
	client := fake.NewClientset()
	lease := func() *coordinationv1.Lease {
		l, err := client.CoordinationV1().Leases("default").Get(context.Background(), "r.a", metav1.GetOptions{})
		require.NoError(t, err)
		return l
	}
	ensure := func(w int) {
		c := Config{Ring: "r", Identity: "a", Namespace: "default", Weight: w,
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond}
		m, err := NewMember(client, c, MemberOptions{})
		require.NoError(t, err)
		require.NoError(t, m.ensureLease(context.Background()))
	}
	ensure(3)
	assert.Equal(t, 3, MemberWeight(lease()))
	assert.Equal(t, "r", lease().Labels[RingLabel])
	ensure(5)
	assert.Equal(t, 5, MemberWeight(lease()))
	ensure(1)
	assert.NotContains(t, lease().Annotations, weightAnnotation)
	assert.Equal(t, 1, MemberWeight(lease()))
	assert.Equal(t, 1, MemberWeight(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{weightAnnotation: "lots"}}}))
}

// The sharder's view changes when only a member's weight does: its keys move.
func TestLivenessSeesANewWeight(t *testing.T) {
	l := newLiveness("r", time.Minute, testingclock.NewFakeClock(time.Unix(100, 0)))
	renew := metav1.NewMicroTime(time.Unix(100, 0))
	holder := "a_1"
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "r.a", ResourceVersion: "5"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &renew}}
	l.observe(lease)
	live := l.holders()
	assert.Equal(t, map[string]int{"a": 1}, l.weights(live))
	lease = lease.DeepCopy()
	lease.ResourceVersion = "6"
	lease.Annotations = map[string]string{weightAnnotation: "4"}
	l.observe(lease)
	assert.Equal(t, map[string]int{"a": 4}, l.weights(l.holders()))
}

// The label sharder assigns by the members' weights.
func TestSyncAssignsByWeight(t *testing.T) {
	api := newFakeAPI()
	tm := newTestTerm(t, api, testingclock.NewFakeClock(t0), nil, false, "a", "b")
	weights := map[string]int{"a": 1, "b": 3}
	tm.view = newSnapshot("r", tm.view.live, weights)
	r := NewWeightedRing("r", weights)
	for i := range 40 {
		api.add(owners, fmt.Sprintf("rs-%d", i), nil, nil)
	}
	api.refresh()
	counts := map[string]int{}
	for i := range 40 {
		_, err := tm.sync(context.Background(), fmt.Sprintf("ns/rs-%d", i))
		require.NoError(t, err)
		name := fmt.Sprintf("rs-%d", i)
		got := api.get(owners, name).Labels[Label("r")]
		assert.Equal(t, r.Owner("ns/"+name), got, name)
		counts[got]++
	}
	assert.Greater(t, counts["b"], 2*counts["a"], "b, of weight 3, holds most: %v", counts)
}
