package sharding

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

func TestSlotSetRoundTrips(t *testing.T) {
	for _, s := range []slotSet{0, 1, 1 << 63, 0b1011, ^slotSet(0), 0xf0f0} {
		got, err := parseSlots(s.String())
		require.NoError(t, err)
		assert.Equal(t, s, got, s.String())
	}
	assert.Equal(t, "0-1,3", slotSet(0b1011).String())
	for _, bad := range []string{"64", "3-1", "x", "-1", "1,"} {
		_, err := parseSlots(bad)
		assert.Error(t, err, bad)
	}
	r, err := parseRecord("m-0_0123456789ab:0-3,9")
	require.NoError(t, err)
	assert.Equal(t, slotRecord{holder: "m-0_0123456789ab", slots: 0b1000001111}, r)
	assert.Equal(t, "m-0_0123456789ab:0-3,9", r.String())
	_, err = parseRecord("no-colon")
	assert.Error(t, err)
}

// The slot a member computes for an object is the one whose selector the
// fake cluster (apimachinery's matcher, as the API server) lists it under,
// and the slots' selectors partition the objects.
func TestSlotSelectorsMatchSlotOf(t *testing.T) {
	cluster, err := fakecluster.New()
	require.NoError(t, err)
	cs := cluster.Clientset()
	ctx := context.Background()
	const n = 300
	for i := range n {
		_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("cm-", i)}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	seen := 0
	for slot := range Slots {
		list, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{ShardSelector: slotSelector(HashUID, slot)})
		require.NoError(t, err)
		for _, cm := range list.Items {
			assert.Equal(t, slot, slotOf(string(cm.UID)), cm.Name)
		}
		seen += len(list.Items)
	}
	assert.Equal(t, n, seen, "every object in exactly one slot")
	assert.Contains(t, slotSelector(HashNamespace, Slots-1), "'0xfc00000000000000', '0x10000000000000000'")
}

func TestBalanceSlotsMovesLittle(t *testing.T) {
	one := balanceSlots(nil, []string{"a"}, nil)
	assert.Equal(t, ^slotSet(0), one["a"])

	two := balanceSlots(one, []string{"a", "b"}, nil)
	assert.Equal(t, 32, two["a"].len())
	assert.Equal(t, 32, two["b"].len())
	assert.Zero(t, two["a"]&two["b"])
	assert.Equal(t, one["a"]&two["a"], two["a"], "a keeps what it had")

	three := balanceSlots(two, []string{"a", "b", "c"}, nil)
	moved := 0
	for _, m := range []string{"a", "b"} {
		moved += (two[m] &^ three[m]).len()
	}
	assert.Equal(t, three["c"].len(), moved, "only c's share moves")
	assert.InDelta(t, 21, three["c"].len(), 1)
	assert.Equal(t, ^slotSet(0), three["a"]|three["b"]|three["c"])

	// b leaves: only its slots move, and the result is the same whatever
	// order the members come in.
	left := balanceSlots(three, []string{"c", "a"}, nil)
	assert.Equal(t, three["a"], three["a"]&left["a"])
	assert.Equal(t, three["c"], three["c"]&left["c"])
	assert.Equal(t, left, balanceSlots(three, []string{"a", "c"}, nil))
	assert.Empty(t, balanceSlots(three, nil, nil))
	for n := 1; n <= 10; n++ {
		var live []string
		for i := range n {
			live = append(live, fmt.Sprint("m", i))
		}
		got := balanceSlots(nil, live, nil)
		var union slotSet
		for _, m := range live {
			assert.InDelta(t, Slots/n, got[m].len(), 1)
			assert.Zero(t, union&got[m])
			union |= got[m]
		}
		assert.Equal(t, ^slotSet(0), union)
	}
}

func TestServesShardSelector(t *testing.T) {
	cluster, err := fakecluster.New()
	require.NoError(t, err)
	ok, err := ServesShardSelector(context.Background(), cluster.Clientset(), "default")
	require.NoError(t, err)
	assert.True(t, ok, "the fake cluster serves shard selectors")
	ok, err = ServesShardSelector(context.Background(), k8sfake.NewClientset(), "default")
	require.NoError(t, err)
	assert.False(t, ok, "client-go's fake clientset ignores them")
}

func TestParseSlotRecord(t *testing.T) {
	holder, slots, err := ParseSlotRecord("rs-1_3f2a9c1d0b7e:0-2,42")
	require.NoError(t, err)
	assert.Equal(t, "rs-1_3f2a9c1d0b7e", holder)
	assert.Equal(t, []int{0, 1, 2, 42}, slots)
	holder, slots, err = ParseSlotRecord("")
	require.NoError(t, err)
	assert.Empty(t, holder)
	assert.Empty(t, slots)
	_, _, err = ParseSlotRecord("h:64")
	assert.ErrorContains(t, err, "sharding: slot range")
}
