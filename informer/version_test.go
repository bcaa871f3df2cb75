package informer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

var (
	configMaps = corev1.SchemeGroupVersion.WithResource("configmaps")
	namespaces = corev1.SchemeGroupVersion.WithResource("namespaces")
)

// versionShape is one kind of informer VersionOf meets: typed, metadata and unstructured, a
// namespaced and a cluster-scoped resource, one namespace, several, a label selector.
type versionShape struct {
	name     string
	resource schema.GroupVersionResource
	// build makes the informer on f and returns VersionOf of it.
	build func(t *testing.T, f *informer.Factory) func(context.Context) (*informer.Version, error)
	// write makes one change the informer sees; n makes each call's object new.
	write func(t *testing.T, c *fakecluster.Cluster, n int)
}

func versionOf[T informer.Object](t *testing.T, inf informer.Informer[T], err error) func(context.Context) (*informer.Version, error) {
	t.Helper()
	require.NoError(t, err)
	return func(ctx context.Context) (*informer.Version, error) { return informer.VersionOf(ctx, inf) }
}

func createConfigMap(ns string, labels map[string]string) func(t *testing.T, c *fakecluster.Cluster, n int) {
	return func(t *testing.T, c *fakecluster.Cluster, n int) {
		t.Helper()
		_, err := c.Clientset().CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", n), Namespace: ns, Labels: labels}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

var versionShapes = []versionShape{
	{
		name: "typed namespaced", resource: configMaps,
		build: func(t *testing.T, f *informer.Factory) func(context.Context) (*informer.Version, error) {
			inf, err := informer.For[*corev1.ConfigMap](f)
			return versionOf(t, inf, err)
		},
		write: createConfigMap("a", nil),
	},
	{
		name: "typed cluster-scoped", resource: namespaces,
		build: func(t *testing.T, f *informer.Factory) func(context.Context) (*informer.Version, error) {
			inf, err := informer.For[*corev1.Namespace](f)
			return versionOf(t, inf, err)
		},
		write: func(t *testing.T, c *fakecluster.Cluster, n int) {
			_, err := c.Clientset().CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns-%d", n)}}, metav1.CreateOptions{})
			require.NoError(t, err)
		},
	},
	{
		name: "typed in two namespaces", resource: configMaps,
		build: func(t *testing.T, f *informer.Factory) func(context.Context) (*informer.Version, error) {
			inf, err := informer.For(f, informer.InNamespaces[*corev1.ConfigMap]("a", "b"))
			return versionOf(t, inf, err)
		},
		write: createConfigMap("b", nil),
	},
	{
		name: "typed with a label selector", resource: configMaps,
		build: func(t *testing.T, f *informer.Factory) func(context.Context) (*informer.Version, error) {
			inf, err := informer.For(f, informer.WithLabelSelector[*corev1.ConfigMap]("app=web"))
			return versionOf(t, inf, err)
		},
		write: createConfigMap("a", map[string]string{"app": "web"}),
	},
	{
		name: "typed in a shard set of two shards", resource: configMaps,
		build: func(t *testing.T, f *informer.Factory) func(context.Context) (*informer.Version, error) {
			set, err := informer.NewShardSet(lowerShard, upperShard)
			require.NoError(t, err)
			inf, err := informer.For(f, informer.InShardSet[*corev1.ConfigMap](set))
			return versionOf(t, inf, err)
		},
		write: createConfigMap("a", nil),
	},
	{
		name: "metadata", resource: configMaps,
		build: func(t *testing.T, f *informer.Factory) func(context.Context) (*informer.Version, error) {
			inf, err := informer.ForMetadata(f, configMaps)
			return versionOf(t, inf, err)
		},
		write: createConfigMap("a", nil),
	},
	{
		name: "unstructured", resource: configMaps,
		build: func(t *testing.T, f *informer.Factory) func(context.Context) (*informer.Version, error) {
			inf, err := informer.ForResource[*unstructured.Unstructured](f, configMaps)
			return versionOf(t, inf, err)
		},
		write: createConfigMap("a", nil),
	},
}

// startLagging starts a factory over a connection to c that lags at c's state now, builds the
// shape's informer on it and waits for it to list (from the past).
func startLagging(t *testing.T, c *fakecluster.Cluster, s versionShape) (version func(context.Context) (*informer.Version, error), catchUp func(...schema.GroupVersionResource)) {
	t.Helper()
	conn := c.Connect()
	catchUp = conn.Lag(c.Snapshot(), s.resource)
	f := informer.NewFactory(conn.Clientset(), informer.Options{DynamicClient: conn.Dynamic(), MetadataClient: conn.Metadata()})
	t.Cleanup(f.Shutdown)
	version = s.build(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f.Start(ctx)
	require.NoError(t, f.WaitForCacheSync(ctx))
	return version, catchUp
}

func newVersionCluster(t *testing.T) *fakecluster.Cluster {
	t.Helper()
	c, err := fakecluster.New(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "b"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "old", Labels: map[string]string{"app": "web"}}},
	)
	require.NoError(t, err)
	return c
}

// A cache that missed a write of its own resource has not reached a version taken after it,
// and Confirm does not pretend it has; once it catches up, Reached and Wait say so.
func TestVersionOfALaggingCache(t *testing.T) {
	for _, s := range versionShapes {
		t.Run(s.name, func(t *testing.T) {
			c := newVersionCluster(t)
			version, catchUp := startLagging(t, c, s)
			s.write(t, c, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			v, err := version(ctx)
			require.NoError(t, err)
			assert.False(t, v.Reached(), "the cache lags behind the write")
			assert.Contains(t, v.Lagging(), "the cache is at")
			ok, err := v.Confirm(ctx)
			require.NoError(t, err)
			assert.False(t, ok, "the server's list holds an object the cache does not")

			catchUp()
			require.NoError(t, v.Wait(ctx))
			assert.True(t, v.Reached())
			assert.Empty(t, v.Lagging())
		})
	}
}

// A quiet resource's cache is current although its resourceVersion is behind the server's
// (other resources were written since): Reached cannot tell, Confirm proves it, and Wait
// returns without a bookmark.
func TestVersionOfAQuietCache(t *testing.T) {
	for _, s := range versionShapes {
		t.Run(s.name, func(t *testing.T) {
			c := newVersionCluster(t)
			version, _ := startLagging(t, c, s)
			// Writes to another resource move the cluster's resourceVersion past the cache's.
			_, err := c.Clientset().CoreV1().Secrets("a").Create(context.Background(), &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			v, err := version(ctx)
			require.NoError(t, err)
			assert.False(t, v.Reached(), "nothing tells the informer of the later resourceVersion")
			ok, err := v.Confirm(ctx)
			require.NoError(t, err)
			assert.True(t, ok, "the cache holds what the server lists")
			assert.True(t, v.Reached(), "once confirmed")
			require.NoError(t, v.Wait(ctx))
		})
	}
}

// A cache still holding an object deleted on the server is not confirmed.
func TestVersionConfirmSeesADeleteTheCacheMissed(t *testing.T) {
	c := newVersionCluster(t)
	version, catchUp := startLagging(t, c, versionShapes[0])
	require.NoError(t, c.Clientset().CoreV1().ConfigMaps("a").Delete(context.Background(), "old", metav1.DeleteOptions{}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := version(ctx)
	require.NoError(t, err)
	ok, err := v.Confirm(ctx)
	require.NoError(t, err)
	assert.False(t, ok)
	catchUp()
	require.NoError(t, v.Wait(ctx))
}

// Wait ends with its context while the cache lags.
func TestVersionWaitEndsWithItsContext(t *testing.T) {
	c := newVersionCluster(t)
	version, _ := startLagging(t, c, versionShapes[0])
	versionShapes[0].write(t, c, 1)
	v, err := version(context.Background())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, v.Wait(ctx), context.DeadlineExceeded)
}

// client-go's plain fake clientset stamps its lists with a resourceVersion per resource, not its
// objects (nor its watch events): Wait still returns, the cache compared with a list by keys.
func TestVersionOnClientGosFakeClientset(t *testing.T) {
	cs := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "x"}})
	f := informer.NewFactory(cs, informer.Options{})
	defer f.Shutdown()
	inf, err := informer.For[*corev1.ConfigMap](f)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f.Start(ctx)
	require.NoError(t, f.WaitForCacheSync(ctx))
	v, err := informer.VersionOf(ctx, inf)
	require.NoError(t, err)
	require.NoError(t, v.Wait(ctx), "at the list's resourceVersion")

	_, err = cs.CoreV1().ConfigMaps("a").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "y"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, err := inf.Lister().Namespace("a").Get("y"); return err == nil }, 10*time.Second, time.Millisecond)
	v, err = informer.VersionOf(ctx, inf)
	require.NoError(t, err)
	require.NoError(t, v.Wait(ctx), "an event without a resourceVersion: confirmed by the list")
}

// A namespace that leaves an InNamespaceSet while its cache lags is not waited for: its informer
// stopped, and the version is reached once the namespaces left are.
func TestVersionOfANamespaceSetThatShrinks(t *testing.T) {
	c := newVersionCluster(t)
	set, err := informer.NewNamespaceSet("a", "b")
	require.NoError(t, err)
	s := versionShape{
		name: "typed in a namespace set", resource: configMaps,
		build: func(t *testing.T, f *informer.Factory) func(context.Context) (*informer.Version, error) {
			inf, err := informer.For(f, informer.InNamespaceSet[*corev1.ConfigMap](set))
			return versionOf(t, inf, err)
		},
	}
	version, _ := startLagging(t, c, s)
	createConfigMap("b", nil)(t, c, 1) // b's cache misses it; a's misses nothing
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := version(ctx)
	require.NoError(t, err)
	assert.False(t, v.Reached())
	assert.Contains(t, v.Lagging(), "b: the cache is at")
	ok, err := v.Confirm(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "b's cache lags")

	set.Remove("b")
	require.NoError(t, v.Wait(ctx), "a is confirmed, b is gone")
}
