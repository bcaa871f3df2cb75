package fakecluster_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/watch"
)

const lowerHalf = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"

func inLowerHalf(t *testing.T, uid string) bool {
	h, err := strconv.ParseUint(sharding.HashField(uid), 16, 64)
	require.NoError(t, err)
	return h < 1<<63
}

// A shard selector filters lists and watches by the hash of the UID, as kube-apiserver with
// ShardedListAndWatch does (testkit's TestAPIServerFeatureGates checks the server), and a
// typed list echoes it in metadata.shardInfo.
func TestShardSelectorFiltersListsAndWatches(t *testing.T) {
	cs := newCluster(t)
	ctx := context.Background()
	var want []string
	for i := range 20 {
		p, err := cs.CoreV1().Pods("default").Create(ctx, pod(fmt.Sprintf("p-%02d", i)), metav1.CreateOptions{})
		require.NoError(t, err)
		if inLowerHalf(t, string(p.UID)) {
			want = append(want, p.Name)
		}
	}
	require.NotEmpty(t, want)
	list, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{ShardSelector: lowerHalf})
	require.NoError(t, err)
	var got []string
	for _, p := range list.Items {
		got = append(got, p.Name)
	}
	assert.ElementsMatch(t, want, got)
	require.NotNil(t, list.ShardInfo)
	assert.Equal(t, lowerHalf, list.ShardInfo.Selector)

	all, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, all.Items, 20)
	assert.Nil(t, all.ShardInfo)

	w, err := cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{ShardSelector: lowerHalf, ResourceVersion: list.ResourceVersion})
	require.NoError(t, err)
	defer w.Stop()
	var inside string
	for i := 0; inside == ""; i++ {
		p, err := cs.CoreV1().Pods("default").Create(ctx, pod(fmt.Sprintf("q-%02d", i)), metav1.CreateOptions{})
		require.NoError(t, err)
		if inLowerHalf(t, string(p.UID)) {
			inside = p.Name
		}
	}
	ev := next(t, w)
	assert.Equal(t, watch.Added, ev.Type)
	assert.Equal(t, inside, ev.Object.(*corev1.Pod).Name, "the objects created outside the range were not sent")

	_, err = cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{ShardSelector: "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')"})
	assert.ErrorContains(t, err, `unsupported field path "object.metadata.name"`)
}
