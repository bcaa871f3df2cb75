package testkit_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/client-go/metadata"

	"github.com/ctrlkit/ctrlkit/testkit"
)

// A dedicated server runs with the feature gates asked for: with the alpha ShardedListAndWatch
// on, a list filtered by a range of the UIDs' FNV-1a hash returns exactly the objects in it and
// echoes the selector in metadata.shardInfo (without the gate the field is ignored: the shared
// server's list is complete and carries none). docs/design/sharding.md builds on these facts.
func TestAPIServerFeatureGates(t *testing.T) {
	env := testkit.NewAPIServerWithOptions(t, testkit.APIServerOptions{FeatureGates: map[string]bool{"ShardedListAndWatch": true}})
	ctx, ns := env.Context(), env.Namespace()
	const n = 40
	for i := range n {
		_, err := env.Client().CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%02d", i)}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	all, err := env.Client().CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, all.Items, n)
	var want []string
	for _, cm := range all.Items {
		h, err := strconv.ParseUint(sharding.HashField(string(cm.UID)), 16, 64)
		require.NoError(t, err)
		if h < 1<<63 {
			want = append(want, cm.Name)
		}
	}

	sel := "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
	half, err := env.Client().CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ShardSelector: sel})
	require.NoError(t, err)
	var got []string
	for _, cm := range half.Items {
		got = append(got, cm.Name)
	}
	assert.ElementsMatch(t, want, got, "the lower half of the hash space")
	require.NotNil(t, half.ShardInfo, "a filtered list says so")
	assert.Equal(t, sel, half.ShardInfo.Selector)

	// What a client that looks for the server's support must know: the metadata client's list
	// is filtered but does not carry shardInfo, and only the UID and namespace can be hashed.
	meta, err := metadata.NewForConfig(env.Config())
	require.NoError(t, err)
	partial, err := meta.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace(ns).List(ctx, metav1.ListOptions{ShardSelector: sel})
	require.NoError(t, err)
	assert.Len(t, partial.Items, len(want))
	assert.Nil(t, partial.ShardInfo)
	_, err = env.Client().CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ShardSelector: "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')"})
	assert.ErrorContains(t, err, `unsupported field path "object.metadata.name"`, "only the UID and the namespace are hashed")

	shared := testkit.SharedAPIServer(t)
	_, err = shared.Client().CoreV1().ConfigMaps(shared.Namespace()).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	unfiltered, err := shared.Client().CoreV1().ConfigMaps(shared.Namespace()).List(ctx, metav1.ListOptions{ShardSelector: "shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000001')"})
	require.NoError(t, err)
	assert.Len(t, unfiltered.Items, 1, "without the gate the selector is ignored")
	assert.Nil(t, unfiltered.ShardInfo)
}
