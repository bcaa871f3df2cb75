package manager_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/leaderelection"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// A Manager over a real API server exports client-go's own series on its
// /metrics: the informer's LIST and the Lease's writes by code, method and
// host, their latencies, and leader_election_master_status for its Lease.
func testClientGoMetrics(t *testing.T, env *testkit.Env) {
	cl := newCluster(t, env)
	cfg := env.Config()
	u, err := url.Parse(cfg.Host)
	require.NoError(t, err)
	client := newClient(t, cfg)
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2)))
	informerName := "metrics-test-" + cl.namespace // process-unique
	factory := informer.NewFactory(client, informer.Options{Namespace: cl.namespace, Logger: logger, InformerName: informerName})
	const leaseName = "ctrlkit-metrics-test"
	mgr, err := manager.New(manager.Options{
		Client: client, Factory: factory, Logger: logger,
		LeaderElection: &leaderelection.Config{
			Enabled: true, Namespace: cl.namespace, Name: leaseName, Identity: "metrics",
			LeaseDuration: apiLeaseDuration, RenewDeadline: apiRenewDeadline, RetryPeriod: apiRetryPeriod,
			ReleaseOnCancel: true,
		},
	})
	require.NoError(t, err)
	// After New: an informer reports its store through the provider hooked
	// when it was built, and the first New hooks it.
	_, err = informer.For[*corev1.ConfigMap](factory)
	require.NoError(t, err)

	stop := manager.StartManager(t, context.Background(), mgr)
	waitUntil(t, apiWait, mgr.Elector().IsLeader, "the Manager leads")
	waitUntil(t, apiWait, func() bool {
		code, _ := probe(mgr.ReadyzHandler())
		return code == 200
	}, "the Manager is ready")

	leader := fmt.Sprintf(`leader_election_master_status{name="%s/%s"}`, cl.namespace, leaseName)
	configMaps := fmt.Sprintf(`{group="",name=%q,resource="configmaps",version="v1"}`, informerName)
	_, body := probe(mgr.MetricsHandler())
	// The exposition sorts labels by name. (The test server's client config
	// has no client-side rate limiter, so no rate limiter series here.)
	for _, series := range []string{
		fmt.Sprintf(`rest_client_requests_total{code="200",host=%q,method="GET"}`, u.Host),  // the LIST, the Lease's GETs
		fmt.Sprintf(`rest_client_requests_total{code="201",host=%q,method="POST"}`, u.Host), // the Lease's creation
		fmt.Sprintf(`rest_client_request_duration_seconds_count{host=%q,verb="GET"}`, u.Host),
		leader + " 1",
		// The informer's queue, drained, and its store's resourceVersion.
		"informer_queued_items" + configMaps + " 0",
		"informer_store_resource_version" + configMaps + " ",
		"informer_processing_latency_seconds_count" + configMaps,
	} {
		assert.Contains(t, body, series)
	}
	assert.NotContains(t, body, "informer_store_resource_version"+configMaps+" 0\n", "a real resourceVersion")
	require.NoError(t, stop())
	_, body = probe(mgr.MetricsHandler())
	assert.Contains(t, body, leader+" 0", "not the leader once stopped")
	assert.NotContains(t, body, configMaps, "a stopped factory's informer series are gone")
}
