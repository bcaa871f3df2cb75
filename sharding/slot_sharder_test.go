package sharding

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// slotRoundFixture is a sharder term over member Leases in a fake cluster,
// whose cache a test sets by hand (so it can lag behind the server).
type slotRoundFixture struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	clock  *testingclock.FakeClock
	term   *slotTerm
	cache  map[string]*coordinationv1.Lease
}

func newSlotRoundFixture(t *testing.T) *slotRoundFixture {
	cluster, err := fakecluster.New()
	require.NoError(t, err)
	f := &slotRoundFixture{t: t, ctx: context.Background(), client: cluster.Clientset(),
		clock: testingclock.NewFakeClock(time.Unix(1000, 0)), cache: map[string]*coordinationv1.Lease{}}
	cfg := Config{Ring: "r", Namespace: "ns", Identity: "s", Mode: ModeServer}.WithDefaults()
	f.term = &slotTerm{cfg: cfg, leases: f.client.CoordinationV1().Leases("ns"), clock: f.clock,
		live: newLiveness("r", cfg.LeaseDuration, f.clock), reads: map[string]time.Time{},
		cached: func() map[string]*coordinationv1.Lease { return f.cache }}
	return f
}

// join creates member id's Lease, held by holder <id>_p, and caches it.
func (f *slotRoundFixture) join(id string) {
	holder := id + "_p"
	now := metav1.NewMicroTime(f.clock.Now())
	_, err := f.client.CoordinationV1().Leases("ns").Create(f.ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "r." + id, Namespace: "ns", Labels: map[string]string{RingLabel: "r"}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &now},
	}, metav1.CreateOptions{})
	require.NoError(f.t, err)
	f.refresh(id)
}

// refresh caches member id's Lease as the server has it.
func (f *slotRoundFixture) refresh(id string) {
	l, err := f.client.CoordinationV1().Leases("ns").Get(f.ctx, "r."+id, metav1.GetOptions{})
	require.NoError(f.t, err)
	f.cache[id] = l
	f.term.live.observe(l)
}

// serve writes member id's served record as its keeper would.
func (f *slotRoundFixture) serve(id, slots string) {
	_, err := f.client.CoordinationV1().Leases("ns").Patch(f.ctx, "r."+id, types.MergePatchType,
		metaPatch("", nil, map[string]*string{ServingAnnotation("r"): ptr(id + "_p:" + slots)}), metav1.PatchOptions{})
	require.NoError(f.t, err)
	f.refresh(id)
}

// assigned is member id's slots record on the server.
func (f *slotRoundFixture) assigned(id string) slotSet {
	l, err := f.client.CoordinationV1().Leases("ns").Get(f.ctx, "r."+id, metav1.GetOptions{})
	require.NoError(f.t, err)
	r, err := parseRecord(l.Annotations[SlotsAnnotation("r")])
	require.NoError(f.t, err)
	return r.slots
}

// A slot leaves a live member before it reaches the next one, and only once
// the first no longer records it as served.
func TestSlotRoundMovesThroughTheServedRecord(t *testing.T) {
	f := newSlotRoundFixture(t)
	f.join("a")
	f.term.round(f.ctx)
	assert.Equal(t, ^slotSet(0), f.assigned("a"), "alone, a gets every slot")
	f.refresh("a")
	f.serve("a", "0-63")

	f.join("b")
	f.term.round(f.ctx)
	f.refresh("a")
	f.refresh("b")
	assert.Equal(t, 32, f.assigned("a").len(), "a gives up half at once")
	assert.Zero(t, f.assigned("b"), "b waits: a still serves all")

	f.serve("a", f.assigned("a").String())
	f.term.round(f.ctx)
	f.refresh("b")
	assert.Equal(t, ^f.assigned("a"), f.assigned("b"), "b gets what a no longer serves")
}

// A write whose reply was lost may be stored and not yet cached: the sharder
// must not give the slot it gave to a second member on the strength of a
// stale cache.
func TestSlotRoundRereadsBeforeGiving(t *testing.T) {
	f := newSlotRoundFixture(t)
	f.join("a")
	f.join("b")
	f.term.round(f.ctx)
	f.refresh("a")
	f.refresh("b")
	a, b := f.assigned("a"), f.assigned("b")
	require.Equal(t, 32, a.len())
	require.Equal(t, ^a, b)

	// b leaves its slots to a on the server (the sharder's own write, its
	// reply lost), but the cache still shows b's old record. A third member
	// joins: its share must not be taken from what b's stale record hides.
	stale := f.cache["b"].DeepCopy()
	_, err := f.client.CoordinationV1().Leases("ns").Patch(f.ctx, "r.b", types.MergePatchType,
		metaPatch("", nil, map[string]*string{SlotsAnnotation("r"): ptr("b_p:" + b.String()), ServingAnnotation("r"): ptr("b_p:" + b.String())}), metav1.PatchOptions{})
	require.NoError(t, err)
	f.cache["b"] = stale
	f.cache["b"].Annotations = nil // the cache has seen neither record
	f.join("c")
	f.term.round(f.ctx)
	f.refresh("c")
	assert.Zero(t, f.assigned("c")&b, "c is given none of b's slots: the server says b serves them")
}

// A member that stopped renewing has its records cleared, after a fresh
// read, before its slots go to others.
func TestSlotRoundFreesADeadMember(t *testing.T) {
	f := newSlotRoundFixture(t)
	f.join("a")
	f.join("b")
	f.term.round(f.ctx)
	f.refresh("a")
	f.refresh("b")
	f.serve("a", f.assigned("a").String())
	f.serve("b", f.assigned("b").String())

	f.clock.Step(f.term.cfg.LeaseDuration) // b stops renewing; a renews
	now := metav1.NewMicroTime(f.clock.Now())
	l := f.cache["a"].DeepCopy()
	l.Spec.RenewTime = &now
	_, err := f.client.CoordinationV1().Leases("ns").Update(f.ctx, l, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.refresh("a")
	f.term.round(f.ctx)
	got, err := f.client.CoordinationV1().Leases("ns").Get(f.ctx, "r.b", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, got.Annotations, SlotsAnnotation("r"), "b's records cleared")
	assert.NotContains(t, got.Annotations, ServingAnnotation("r"))
	f.cache["b"] = got
	f.refresh("a")
	f.term.round(f.ctx)
	assert.Equal(t, ^slotSet(0), f.assigned("a"), "a takes every slot")
}
