package multicluster_test

import (
	"fmt"
	goruntime "runtime"
	"testing"
	"weak"

	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/multicluster"
)

// Nothing a disengaged cluster had is left behind: once its goroutines
// ended, the Cluster and its informer factory (with its caches and clients)
// are garbage, whatever the controller still holds (its queue, its
// limiter, its dynamic watches of other clusters). BenchmarkMultiCluster
// measures what remains of the heap (the Go runtime keeps every goroutine's
// descriptor for reuse).
func TestADisengagedClusterIsCollected(t *testing.T) {
	list := multicluster.NewList(nil)
	fleet, c, _ := annotating(t, multicluster.Options{Provider: list})
	run(t, fleet, c)
	const n = 20
	var clusters []weak.Pointer[multicluster.Cluster]
	var factories []weak.Pointer[informer.Factory]
	for i := range n {
		conn, _ := fake(t, configMap("default", "a"))
		name := fmt.Sprintf("c%d", i)
		require.NoError(t, list.Add(name, conn))
		require.Eventually(t, annotated(t, fleet, name, "default", "a"), wait, pollEvery)
		cl, err := fleet.Get(name)
		require.NoError(t, err)
		clusters = append(clusters, weak.Make(cl))
		factories = append(factories, weak.Make(cl.Factory))
	}
	for i := range n {
		list.Remove(fmt.Sprintf("c%d", i))
	}
	require.Eventually(t, func() bool {
		goruntime.GC()
		for i := range clusters {
			if clusters[i].Value() != nil || factories[i].Value() != nil {
				return false
			}
		}
		return true
	}, wait, pollEvery, "every disengaged Cluster and its Factory are collected")
}
