package controller

import (
	"context"
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
	c, err := New("metered", Reconciler[string](r), Options[string]{Metrics: m, NoRetries: true, Workers: 2})
	require.NoError(t, err)
	ctx, _ := testLogger(t)
	stop := startController(t, ctx, c)
	for _, k := range []string{"a", "b", "terminal", "error"} {
		c.Enqueue(k)
	}
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(m.reconcileTotal.WithLabelValues("metered", ResultSuccess)) == 2 &&
			testutil.ToFloat64(m.reconcileTotal.WithLabelValues("metered", ResultError)) == 1 &&
			testutil.ToFloat64(m.reconcileTotal.WithLabelValues("metered", ResultTerminal)) == 1
	}, 10*time.Second, time.Millisecond)
	waitIdle(t, c)
	stop()

	assert.Equal(t, 2.0, testutil.ToFloat64(m.workers.WithLabelValues("metered")))
	assert.Equal(t, 0.0, testutil.ToFloat64(m.activeWorkers.WithLabelValues("metered")))
	assert.Equal(t, 4.0, testutil.ToFloat64(m.adds.WithLabelValues("metered")), "queue metrics carry the controller's name")
	n, err := testutil.GatherAndCount(reg, "ctrlkit_controller_reconcile_duration_seconds")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	expected := `
# HELP ctrlkit_controller_reconcile_total Reconciles per controller by result (success, error, requeue, requeue_after, terminal).
# TYPE ctrlkit_controller_reconcile_total counter
ctrlkit_controller_reconcile_total{controller="metered",result="error"} 1
ctrlkit_controller_reconcile_total{controller="metered",result="requeue"} 0
ctrlkit_controller_reconcile_total{controller="metered",result="requeue_after"} 0
ctrlkit_controller_reconcile_total{controller="metered",result="success"} 2
ctrlkit_controller_reconcile_total{controller="metered",result="terminal"} 1
`
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(expected), "ctrlkit_controller_reconcile_total"))
}
