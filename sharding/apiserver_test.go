package sharding_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/metadata"

	"github.com/ctrlkit/ctrlkit/controller/controllertest"
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
	exercise(t, newRing(t, env, meta, 150, true))
}
