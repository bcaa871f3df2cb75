package sharding_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"

	"github.com/ctrlkit/ctrlkit/sharding"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// Members of unequal weight on a real API server: each publishes its weight on its Lease, and
// the elected sharder labels every object for the member the weighted ring gives it, the
// member of weight 3 about three times the objects of the member of weight 1.
func TestRingOfWeightsOnAPIServer(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	meta, err := metadata.NewForConfig(env.Config())
	require.NoError(t, err)
	ns := env.Namespace()
	const n = 60
	for i := range n {
		_, err := env.Client().CoreV1().ConfigMaps(ns).Create(env.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strconv.Itoa(i)}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	weights := map[string]int{"light": 1, "heavy": 3}
	for identity, w := range weights {
		cfg := sharding.Config{Ring: ringName, Namespace: ns, Identity: identity, Weight: w,
			LeaseDuration: testLeaseDuration, RenewDeadline: testRenewDeadline, RetryPeriod: testRetryPeriod}
		m, err := sharding.NewMember(env.Client(), cfg, sharding.MemberOptions{})
		require.NoError(t, err)
		sh, err := sharding.NewSharder(env.Client(), meta, cfg, sharding.SharderOptions{Resource: configMaps, Namespace: ns})
		require.NoError(t, err)
		g, err := sharding.NewGroup(identity, m, sh, nil, idle{})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(env.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = g.Run(ctx)
		}()
		t.Cleanup(func() {
			cancel()
			<-done
		})
	}
	ring := sharding.NewWeightedRing(ringName, weights)
	counts := map[string]int{}
	require.Eventually(t, func() bool {
		cms, err := env.Client().CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		clear(counts)
		for _, cm := range cms.Items {
			want := ring.Owner(ns + "/" + cm.Name)
			if cm.Labels[sharding.Label(ringName)] != want {
				return false
			}
			counts[want]++
		}
		return true
	}, 60*time.Second, 20*time.Millisecond, "every object labelled for its member in the weighted ring")
	lease, err := env.Client().CoordinationV1().Leases(ns).Get(env.Context(), ringName+".heavy", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, 3, sharding.MemberWeight(lease), "the member Lease publishes the weight")
	t.Logf("weight 1: %d objects, weight 3: %d", counts["light"], counts["heavy"])
	// The 60 objects of a random namespace split 1:3 only on average: the
	// lighter member gets 20 or more about one run in eleven. On them, the
	// heavier member has more; the 1:3 proportion shows over many keys of
	// the same ring, which the labels above follow.
	assert.Greater(t, counts["heavy"], counts["light"])
	many := map[string]int{}
	for i := range 10000 {
		many[ring.Owner(ns+"/key-"+strconv.Itoa(i))]++
	}
	assert.Greater(t, many["heavy"], 2*many["light"], "weight 3 owns more than twice the keys of weight 1")
}
