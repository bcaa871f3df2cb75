package manager

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/informer"
)

func podLabels(name string) map[string]string {
	return map[string]string{"name": name, "group": "", "version": "v1", "resource": "pods"}
}

// newPodManager returns a Manager over a fake cluster holding one Pod, with
// a Pod informer.
func newPodManager(t *testing.T) *Manager {
	t.Helper()
	client := fake.NewClientset()
	_, err := client.CoreV1().Pods("ns").Create(context.Background(),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	m, err := New(Options{Client: client})
	require.NoError(t, err)
	_, err = informer.For[*corev1.Pod](m.Factory())
	require.NoError(t, err)
	return m
}

// The factory a Manager builds reports client-go's informer series under a
// name of its own; two Managers of one process report under two names, and
// each Manager's registry carries both (the series are process-wide). Once
// a Manager stopped, its series are gone and its name is free again.
func TestManagerExportsInformerMetrics(t *testing.T) {
	first, second := newPodManager(t), newPodManager(t)
	name1, name2 := first.Factory().InformerName(), second.Factory().InformerName()
	require.NotEmpty(t, name1)
	require.NotEmpty(t, name2)
	require.NotEqual(t, name1, name2)
	assert.Regexp(t, `^ctrlkit-manager-\d+$`, name1)

	ctx, _ := testLogger(t)
	stop1 := startManager(t, ctx, first)
	stop2 := startManager(t, ctx, second)
	for _, m := range []*Manager{first, second} {
		require.Eventually(t, m.cachesSynced.Load, 10*time.Second, time.Millisecond)
	}
	for _, name := range []string{name1, name2} {
		require.Eventually(t, func() bool {
			v, found := sample(t, first.Gatherer(), "informer_store_resource_version", podLabels(name))
			return found && v > 0
		}, 10*time.Second, time.Millisecond, "the store's resourceVersion of %s", name)
		_, found := sample(t, second.Gatherer(), "informer_store_resource_version", podLabels(name))
		assert.True(t, found, "%s in the other Manager's registry", name)
		v, found := sample(t, first.Gatherer(), "informer_queued_items", podLabels(name))
		assert.True(t, found, "queued items of %s", name)
		assert.Equal(t, 0.0, v, "the queue of a synced, idle informer is empty")
	}

	require.NoError(t, stop1())
	assert.Empty(t, first.Factory().InformerName())
	_, found := sample(t, second.Gatherer(), "informer_store_resource_version", podLabels(name1))
	assert.False(t, found, "a stopped Manager's informer series are deleted")
	_, found = sample(t, second.Gatherer(), "informer_queued_items", podLabels(name1))
	assert.False(t, found)
	_, found = sample(t, second.Gatherer(), "informer_store_resource_version", podLabels(name2))
	assert.True(t, found, "the running Manager's series stay")

	// The name is free: a new factory reports under it.
	f := informer.NewFactory(fake.NewClientset(), informer.Options{InformerName: name1})
	defer f.Shutdown()
	assert.Equal(t, name1, f.InformerName())
	_, err := informer.For[*corev1.Pod](f)
	require.NoError(t, err)
	f.Start(ctx)
	require.NoError(t, f.WaitForCacheSync(ctx))
	require.Eventually(t, func() bool {
		_, found := sample(t, second.Gatherer(), "informer_queued_items", podLabels(name1))
		return found
	}, 10*time.Second, time.Millisecond, "the name's new holder reports")
	require.NoError(t, stop2())
}

// Cache.InformerName may replace the Manager's informer name, or turn the
// informer series off with "-".
func TestManagerInformerNameOption(t *testing.T) {
	name := "informer-name-option-" + t.Name()
	m, err := New(Options{Client: fake.NewClientset(), Cache: informer.Options{InformerName: name}})
	require.NoError(t, err)
	assert.Equal(t, name, m.Factory().InformerName())
	m.Factory().Shutdown()

	m, err = New(Options{Client: fake.NewClientset(), Cache: informer.Options{InformerName: "-"}})
	require.NoError(t, err)
	assert.Empty(t, m.Factory().InformerName())
}

// A Manager New refuses releases the name of the factory it built, so a
// corrected retry reports under it.
func TestManagerNewErrorReleasesInformerName(t *testing.T) {
	name := "informer-name-error-" + t.Name()
	opts := Options{
		Client: fake.NewClientset(),
		Cache:  informer.Options{InformerName: name},
		// Not a Gatherer, and no Gatherer: refused after the factory was built.
		Registerer: struct{ prometheus.Registerer }{prometheus.NewRegistry()},
	}
	_, err := New(opts)
	require.Error(t, err)

	opts.Registerer = nil
	m, err := New(opts)
	require.NoError(t, err)
	defer m.Factory().Shutdown()
	assert.Equal(t, name, m.Factory().InformerName())
}
