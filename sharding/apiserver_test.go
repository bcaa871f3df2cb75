package sharding_test

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/sharding"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// The ring's scenario on a real kube-apiserver, over 300 ConfigMaps: the
// label selectors, preconditioned metadata patches and Lease timings are the
// server's own. Every write the members, sharders and dispatchers make (Leases,
// label patches, acknowledgements, children) goes through writeFaults: a
// tenth is refused with a 5xx, another tenth loses its reply after the
// server applied it.
func TestRingOnAPIServer(t *testing.T) {
	// A server of its own: it stops with the test, so the goroutine leak
	// check of TestMain sees none of its waiters.
	env := testkit.NewAPIServer(t)

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
	require.ErrorAs(t, err, new(*sharding.AccessError))
	var denied *sharding.AccessError
	require.ErrorAs(t, err, &denied)
	require.Contains(t, denied.Denied, "patch configmaps in namespace "+env.Namespace())
	require.Contains(t, denied.Denied, "update leases.coordination.k8s.io in namespace "+env.Namespace())
	require.Len(t, denied.Denied, 6+3+3)

	seed := rand.Uint64() % 1_000_000
	if s := os.Getenv(envSeed); s != "" {
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "%s must be a seed", envSeed)
	}
	t.Logf("write faults from seed %d: rerun this schedule with %s=%d", seed, envSeed, seed)
	faults := newWriteFaults(seed, 0.1, 0.1)
	faultyConfig := faults.wrap(env.Config())
	faultyMeta, err := metadata.NewForConfig(faultyConfig)
	require.NoError(t, err)
	faultyClient, err := kubernetes.NewForConfig(faultyConfig)
	require.NoError(t, err)
	r := newRing(t, env, faultyMeta, 300, true)
	r.client = faultyClient
	exercise(t, r)
	t.Logf("write faults: %v", faults)
	require.NotZero(t, faults.refused.Load(), "no write refused")
	require.NotZero(t, faults.lost.Load(), "no reply lost")
}
