package sharding_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/controller/controllertest"
	"github.com/ctrlkit/ctrlkit/sharding"
)

// The ring's scenario on a real kube-apiserver, over 150 ConfigMaps: the
// label selectors, preconditioned metadata patches and Lease timings are the
// server's own.
func TestRingOnAPIServer(t *testing.T) {
	// A server of its own: it stops with the test, so the goroutine leak
	// check of TestMain sees none of its waiters.
	env := controllertest.NewAPIServer(t)
	meta, err := metadata.NewForConfig(env.Config())
	require.NoError(t, err)

	// RBAC is checked before anything starts: the test's administrator may
	// do everything, a user without roles nothing.
	opts := sharding.SharderOptions{Resource: configMaps, Children: []schema.GroupVersionResource{secrets}, Namespace: env.Namespace()}
	cfg := sharding.Config{Ring: ringName, Namespace: env.Namespace(), Identity: "a"}
	require.NoError(t, sharding.CheckAccess(env.Context(), env.Client(), cfg, opts))
	nobodyConfig := env.Config()
	nobodyConfig.Impersonate = rest.ImpersonationConfig{UserName: "nobody"}
	nobody, err := kubernetes.NewForConfig(nobodyConfig)
	require.NoError(t, err)
	err = sharding.CheckAccess(env.Context(), nobody, cfg, opts)
	require.ErrorIs(t, err, sharding.ErrForbidden)
	var denied *sharding.AccessError
	require.ErrorAs(t, err, &denied)
	require.Contains(t, denied.Denied, "patch configmaps in namespace "+env.Namespace())
	require.Contains(t, denied.Denied, "update leases.coordination.k8s.io in namespace "+env.Namespace())
	require.Len(t, denied.Denied, 6+3+3)
	exercise(t, newRing(t, env, meta, 150, true))
}
