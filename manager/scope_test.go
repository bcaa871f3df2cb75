package manager

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/informer"
)

// The Manager waits in /readyz for a scoped informer (one client-go informer
// per namespace) as for any other: not ready until every namespace listed.
func TestReadyzWaitsForScopedInformers(t *testing.T) {
	client := fake.NewClientset(configMap("a", "x"), configMap("b", "y"), configMap("c", "z"))
	var allowB atomic.Bool
	var listedA atomic.Int32
	client.PrependReactor("list", "configmaps", func(action clienttesting.Action) (bool, runtime.Object, error) {
		switch action.GetNamespace() {
		case "a":
			listedA.Add(1)
		case "b":
			if !allowB.Load() {
				return true, nil, errors.New("namespace b is not listable yet")
			}
		}
		return false, nil, nil
	})
	m, err := New(Options{Client: client})
	require.NoError(t, err)
	cms, err := informer.For(m.Factory(), informer.InNamespaces[*corev1.ConfigMap]("a", "b"))
	require.NoError(t, err)
	h := m.Handler()
	ctx, _ := testLogger(t)
	stop := startManager(t, ctx, m)

	// Namespace a is listed (and, on the fake, synced at once); b is not.
	require.Eventually(t, func() bool {
		code, body := get(t, h, "/readyz")
		return listedA.Load() > 0 && code == http.StatusServiceUnavailable && strings.Contains(body, "informer caches not synced")
	}, 10*time.Second, time.Millisecond)
	assert.False(t, cms.HasSynced())

	allowB.Store(true)
	require.Eventually(t, func() bool {
		code, _ := get(t, h, "/readyz")
		return code == http.StatusOK
	}, 20*time.Second, 10*time.Millisecond)
	assert.True(t, cms.HasSynced())
	all, err := cms.Lister().List(nil)
	require.NoError(t, err)
	assert.Len(t, all, 2, "namespace c is not cached")
	require.NoError(t, stop())
}
