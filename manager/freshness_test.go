package manager

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// A controller holding keys on a lagging cache (controller.Options.Freshness.MaxLag) keeps
// the process ready, and /readyz?verbose says which informer lags, and once it caught up,
// nothing.
func TestReadyzNamesALaggingCache(t *testing.T) {
	cluster, err := fakecluster.New(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "old"}})
	require.NoError(t, err)
	conn := cluster.Connect()
	catchUp := conn.Lag(cluster.Snapshot(), corev1.SchemeGroupVersion.WithResource("configmaps"))
	_, err = cluster.Clientset().CoreV1().ConfigMaps("ns").Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "new"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	m, err := New(Options{Client: conn.Clientset()})
	require.NoError(t, err)
	rec := controller.ReconcilerFunc[controller.Key](func(context.Context, controller.Key) (controller.Result, error) {
		return controller.Result{}, nil
	})
	c := configMapController(t, m.Factory(), "fresh", rec, controller.Options[controller.Key]{Freshness: controller.Freshness{MaxLag: time.Second}})
	require.NoError(t, m.Add(c))
	h := m.Handler()
	ctx, _ := testLogger(t)
	stop := startManager(t, ctx, m)

	require.Eventually(t, func() bool {
		code, body := get(t, h, "/readyz?verbose")
		return code == http.StatusOK && strings.Contains(body, "[+]synced ok, but: controller fresh: informer configmaps lags by")
	}, 20*time.Second, 10*time.Millisecond)
	code, body := get(t, h, "/readyz")
	assert.Equal(t, http.StatusOK, code, body)

	catchUp()
	require.Eventually(t, func() bool {
		_, body := get(t, h, "/readyz?verbose")
		return strings.Contains(body, "[+]synced ok\n")
	}, 20*time.Second, 10*time.Millisecond)
	require.NoError(t, stop())
}
