package informer_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

const (
	lowerShard = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
	upperShard = "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
)

func TestShardSetRefusesWhatTheServerWouldNot(t *testing.T) {
	_, err := informer.NewShardSet("shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')")
	assert.ErrorContains(t, err, "invalid shard selector")
	set, err := informer.NewShardSet("", lowerShard+" || "+upperShard)
	require.NoError(t, err, `"" is every object; ORed ranges are one shard`)
	assert.Len(t, set.List(), 2)
	assert.Error(t, set.Set("app=web"), "a label selector is not a shard selector")
	assert.Len(t, set.List(), 2, "a refused Set changes nothing")

	cluster, err := fakecluster.New()
	require.NoError(t, err)
	f := informer.NewFactory(cluster.Clientset(), informer.Options{ShardSet: set, Unsharded: []schema.GroupResource{schema.GroupResource{Resource: "secrets"}}})
	defer f.Shutdown()
	_, err = informer.For(f, informer.InNamespaces[*corev1.Pod]("default"))
	assert.ErrorContains(t, err, "follow its ShardSet")
	_, err = informer.For(f, informer.InNamespaces[*corev1.Secret]("default"))
	assert.NoError(t, err, "an unsharded resource's informer is scoped as in any factory")
}

// Shards come and go while the informer runs: a shard added is listed and
// its objects delivered as adds, one removed leaves as out of scope (never a
// delete), reads span the shards, and an object created later reaches the
// shard its UID hashes into.
func TestInShardSetFollowsItsSet(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lo, hi := examplePod("default", "lo", nil), examplePod("other", "hi", nil)
	lo.UID, hi.UID = types.UID("uid-web-0"), types.UID("uid-api-0") // lower and upper half
	cluster, err := fakecluster.New(lo, hi)
	require.NoError(t, err)
	set, err := informer.NewShardSet(lowerShard)
	require.NoError(t, err)
	f := informer.NewFactory(cluster.Clientset(), informer.Options{})
	defer f.Shutdown()
	pods, err := informer.For(f, informer.InShardSet[*corev1.Pod](set))
	require.NoError(t, err)
	events := make(chan string, 20)
	_, err = pods.AddHandler(informer.HandlerFuncs[*corev1.Pod]{
		OnAdd:        func(p *corev1.Pod, _ bool) { events <- "add " + p.Name },
		OnDelete:     func(p *corev1.Pod) { events <- "delete " + p.Name },
		OnOutOfScope: func(p *corev1.Pod) { events <- "out " + p.Name },
	})
	require.NoError(t, err)
	f.Start(ctx)
	require.NoError(t, f.WaitForCacheSync(ctx))
	assert.True(t, f.HasSynced())
	expect := func(want string) {
		t.Helper()
		select {
		case got := <-events:
			assert.Equal(t, want, got)
		case <-time.After(10 * time.Second):
			t.Fatalf("no event; want %q", want)
		}
	}
	expect("add lo")
	_, err = pods.Lister().Get("other", "hi")
	assert.True(t, isNotFound(err), "outside every shard: absent, %v", err)

	require.NoError(t, set.Set(lowerShard, upperShard))
	expect("add hi")
	require.NoError(t, f.WaitForCacheSync(ctx))
	got, err := pods.Lister().Get("other", "hi")
	require.NoError(t, err)
	assert.Equal(t, "hi", got.Name)
	inOther, err := pods.Lister().Namespace("other").List(nil)
	require.NoError(t, err)
	assert.Len(t, inOther, 1, "the namespace index spans the shards")

	require.NoError(t, set.Set(upperShard))
	expect("out lo")
	require.NoError(t, f.WaitForCacheSync(ctx))
	_, err = pods.Lister().Get("default", "lo")
	assert.True(t, isNotFound(err))

	// A new object lands in the shard its UID hashes into, or in none.
	for i := 0; ; i++ {
		p, err := cluster.Clientset().CoreV1().Pods("default").Create(ctx, examplePod("default", fmt.Sprintf("new-%d", i), nil), metav1.CreateOptions{})
		require.NoError(t, err)
		if hashesHigh(string(p.UID)) {
			expect("add " + p.Name)
			break
		}
	}
	require.NoError(t, cluster.Clientset().CoreV1().Pods("other").Delete(ctx, "hi", metav1.DeleteOptions{}))
	expect("delete hi")
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

// hashesHigh reports whether uid hashes into upperShard.
func hashesHigh(uid string) bool {
	h, err := strconv.ParseUint(sharding.HashField(uid), 16, 64)
	return err == nil && h >= 1<<63
}
