package fakecluster_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

func cm(name, v string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Data: map[string]string{"v": v}}
}

// A lagging connection answers cache-served reads (a resourceVersion named) from the snapshot
// and holds its watches until it catches up; quorum reads and writes see the cluster as it is.
// With resources named, only those lag.
func TestConnectionLag(t *testing.T) {
	ctx := context.Background()
	c, err := fakecluster.New(cm("a", "old"), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "s"}})
	require.NoError(t, err)
	snap := c.Snapshot()
	cms := c.Clientset().CoreV1().ConfigMaps("default")
	now, err := cms.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	now.Data["v"] = "new"
	_, err = cms.Update(ctx, now, metav1.UpdateOptions{})
	require.NoError(t, err)

	conn := c.Connect()
	catchUp := conn.Lag(snap, corev1.SchemeGroupVersion.WithResource("configmaps"))
	lagging := conn.Clientset().CoreV1().ConfigMaps("default")
	list, err := lagging.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	assert.Equal(t, "old", list.Items[0].Data["v"], "an informer's list reads the past")
	assert.Equal(t, snap.ResourceVersion(), list.ResourceVersion)
	got, err := lagging.Get(ctx, "a", metav1.GetOptions{ResourceVersion: "0"})
	require.NoError(t, err)
	assert.Equal(t, "old", got.Data["v"])
	got, err = lagging.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "new", got.Data["v"], "a quorum read reads the present")
	_, err = conn.Clientset().CoreV1().Secrets("default").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	require.NoError(t, err, "a resource not named does not lag")

	w, err := lagging.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	require.NoError(t, err)
	defer w.Stop()
	select {
	case ev := <-w.ResultChan():
		t.Fatalf("an event before the lag ended: %v", ev)
	case <-time.After(50 * time.Millisecond): // a sample of "nothing yet", not a wait for a state
	}
	catchUp(corev1.SchemeGroupVersion.WithResource("configmaps"))
	select {
	case ev := <-w.ResultChan():
		assert.Equal(t, watch.Modified, ev.Type)
		assert.Equal(t, "new", ev.Object.(*corev1.ConfigMap).Data["v"], "the watch replays what happened since")
	case <-time.After(10 * time.Second):
		t.Fatal("no event after the lag ended")
	}
}

// Observers see every connection's requests in the order the cluster served them, each
// connection's reactors and actions are its own, and a seeded cluster names objects alike in
// every run.
func TestConnectionObserveAndSeededNames(t *testing.T) {
	ctx := context.Background()
	names := func() []string {
		c, err := fakecluster.NewWithOptions(fakecluster.Options{Rand: rand.New(rand.NewPCG(1, 2))})
		require.NoError(t, err)
		a, b := c.Connect(), c.Connect()
		var seen []string
		for _, conn := range []*fakecluster.Connection{a, b} {
			conn.Observe(func(act clienttesting.Action, obj runtime.Object, err error) {
				if act.GetVerb() == "create" && err == nil {
					m := obj.(metav1.Object)
					seen = append(seen, m.GetName()+" "+string(m.GetUID()))
				}
			})
		}
		gen := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "x-"}}
		for _, conn := range []*fakecluster.Connection{a, b, a} {
			_, err := conn.Clientset().CoreV1().ConfigMaps("default").Create(ctx, gen, metav1.CreateOptions{})
			require.NoError(t, err)
		}
		assert.Len(t, a.Clientset().Actions(), 2, "a connection records its own requests")
		assert.Len(t, b.Clientset().Actions(), 1)
		return seen
	}
	first := names()
	assert.Len(t, first, 3)
	assert.Equal(t, first, names(), "the same seed draws the same names and UIDs")
}
