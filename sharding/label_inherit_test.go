package sharding_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/sharding"
)

func TestInherit(t *testing.T) {
	owner := &metav1.ObjectMeta{Labels: map[string]string{sharding.Label("a"): "m1", sharding.Label("b"): "m2", sharding.DrainLabel("a"): "true", "app": "x"}}
	child := &corev1.Pod{}
	sharding.Inherit(owner, child)
	assert.Equal(t, map[string]string{sharding.Label("a"): "m1", sharding.Label("b"): "m2"}, child.Labels, "every ring, no drain, nothing else")

	child = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}}}
	sharding.Inherit(&metav1.ObjectMeta{Labels: map[string]string{"app": "y"}}, child)
	assert.Equal(t, map[string]string{"app": "x"}, child.Labels, "an unsharded owner changes nothing")
	sharding.Inherit(nil, child)
	sharding.Inherit(owner, nil)
}

func TestMetricsShareARegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	first, err := sharding.NewMetrics(reg)
	require.NoError(t, err)
	second, err := sharding.NewMetrics(reg)
	require.NoError(t, err, "a second Metrics on one registry reuses the collectors")
	require.NotNil(t, first)
	require.NotNil(t, second)
	_, err = sharding.NewMetrics(nil)
	assert.ErrorIs(t, err, sharding.ErrInvalidConfig)
}
