package sharding_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/testkit"
)

// The ring's scenario on the fake cluster, ConfigMaps owning one Secret each, with a quarter of the sharder's
// and the dispatchers' label patches losing their reply after the write.
func TestRingOnFakeClusterWithLostReplies(t *testing.T) {
	env := testkit.NewFake(t)
	n := 0
	meta := &lossyMetadata{Interface: env.Metadata(), lostReplies: func(schema.GroupVersionResource, string) bool {
		n++
		return n%4 == 0
	}}
	r := newRing(t, env.Env, meta, 60, true)
	exercise(t, r)
	t.Logf("%d replies lost", meta.lostCount())
}
