package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewMetricsRegistration(t *testing.T) {
	_, err := NewMetrics(nil)
	assert.ErrorIs(t, err, ErrInvalidOptions)

	reg := prometheus.NewRegistry()
	_, err = NewMetrics(reg)
	require.NoError(t, err)
	_, err = NewMetrics(reg)
	require.Error(t, err, "registering twice with one registry fails")
	assert.Contains(t, err.Error(), "already registered")
}

func TestControllerReportsMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	r := ReconcilerFunc[string](func(_ context.Context, k string) (Result, error) {
		switch k {
		case "terminal":
			return Result{}, Terminal(errBoom)
		case "error":
			return Result{}, errBoom
		}
		return Result{}, nil
	})
	c, err := New("metered", Reconciler[string](r), Options[string]{Metrics: m, Retry: GiveUp(), Workers: 2})
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	stop := startController(t, ctx, c)
	for _, k := range []string{"a", "b", "terminal", "error"} {
		c.Enqueue(k)
	}
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(m.reconcileTotal.WithLabelValues("metered", resultSuccess)) == 2 &&
			testutil.ToFloat64(m.reconcileTotal.WithLabelValues("metered", resultError)) == 2
	}, 10*time.Second, time.Millisecond)
	waitIdle(t, c)
	stop()

	assert.Equal(t, 2.0, testutil.ToFloat64(m.workers.WithLabelValues("metered")))
	assert.Equal(t, 0.0, testutil.ToFloat64(m.activeWorkers.WithLabelValues("metered")))
	assert.Equal(t, 4.0, testutil.ToFloat64(m.adds.WithLabelValues("metered", "metered")), "queue metrics carry the controller's name")
	n, err := testutil.GatherAndCount(reg, "controller_runtime_reconcile_time_seconds")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	// controller-runtime's names and labels, so its dashboards and alerts work unchanged.
	expected := `
# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="metered",result="error"} 2
controller_runtime_reconcile_total{controller="metered",result="requeue"} 0
controller_runtime_reconcile_total{controller="metered",result="requeue_after"} 0
controller_runtime_reconcile_total{controller="metered",result="success"} 2
# HELP controller_runtime_reconcile_errors_total Total number of reconciliation errors per controller
# TYPE controller_runtime_reconcile_errors_total counter
controller_runtime_reconcile_errors_total{controller="metered"} 2
# HELP controller_runtime_terminal_reconcile_errors_total Total number of terminal reconciliation errors per controller
# TYPE controller_runtime_terminal_reconcile_errors_total counter
controller_runtime_terminal_reconcile_errors_total{controller="metered"} 1
# HELP controller_runtime_max_concurrent_reconciles Maximum number of concurrent reconciles per controller
# TYPE controller_runtime_max_concurrent_reconciles gauge
controller_runtime_max_concurrent_reconciles{controller="metered"} 2
# HELP ctrlkit_controller_retries_exhausted_total Keys whose last backoff retry failed (then retried at an interval, or given up), per controller
# TYPE ctrlkit_controller_retries_exhausted_total counter
ctrlkit_controller_retries_exhausted_total{controller="metered"} 1
# HELP ctrlkit_controller_slow_retries_total Failed reconciles of keys past their retries, put back after the slow retry interval, per controller
# TYPE ctrlkit_controller_slow_retries_total counter
ctrlkit_controller_slow_retries_total{controller="metered"} 0
# HELP ctrlkit_controller_slow_retry_keys Keys past their retries that are retried at the slow interval until they succeed, per controller
# TYPE ctrlkit_controller_slow_retry_keys gauge
ctrlkit_controller_slow_retry_keys{controller="metered"} 0
# HELP workqueue_adds_total Total number of adds handled by workqueue
# TYPE workqueue_adds_total counter
workqueue_adds_total{controller="metered",name="metered"} 4
`
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(expected),
		"controller_runtime_reconcile_total", "controller_runtime_reconcile_errors_total", "controller_runtime_terminal_reconcile_errors_total",
		"controller_runtime_max_concurrent_reconciles", "ctrlkit_controller_retries_exhausted_total",
		"ctrlkit_controller_slow_retries_total", "ctrlkit_controller_slow_retry_keys", "workqueue_adds_total"))
}

// A Reconcile that runs past Options.ReconcileTimeout is counted as a timeout.
func TestReconcileTimeoutIsCounted(t *testing.T) {
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	r := ReconcilerFunc[string](func(ctx context.Context, _ string) (Result, error) {
		<-ctx.Done()
		return Result{}, nil
	})
	c, err := New("slow", Reconciler[string](r), Options[string]{Metrics: m, ReconcileTimeout: time.Millisecond})
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	stop := startController(t, ctx, c)
	c.Enqueue("k")
	require.Eventually(t, func() bool { return testutil.ToFloat64(m.timeouts.WithLabelValues("slow")) == 1 }, 10*time.Second, time.Millisecond)
	stop()
}

// A Reconcile whose context ends because the controller stops is not a failure: no error is
// counted or logged, so a clean shutdown with work in flight logs no "Reconcile failed".
func TestShutdownInterruptingAReconcileIsNoFailure(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	started := make(chan struct{})
	r := ReconcilerFunc[string](func(ctx context.Context, _ string) (Result, error) {
		close(started)
		<-ctx.Done()
		return Result{}, fmt.Errorf("updating status: %w", ctx.Err())
	})
	c, err := New("interrupted", Reconciler[string](r), Options[string]{Metrics: m})
	require.NoError(t, err)
	ctx, logs := testLogger(t)
	stop := startController(t, ctx, c)
	c.Enqueue("k")
	<-started
	stop()
	assert.Zero(t, testutil.ToFloat64(m.reconcileTotal.WithLabelValues("interrupted", resultError)))
	for _, e := range logged(logs) {
		assert.NotContains(t, e.Message, "Reconcile failed")
	}
	assert.Contains(t, messages(logs), "Reconcile interrupted by shutdown; the key stays queued")
}
