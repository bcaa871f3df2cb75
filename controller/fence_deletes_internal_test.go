package controller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"
)

// The deletes an informer shows are remembered only while a Reconcile runs (only its writes
// can predate them), dropped when the last one returns, pruned after the TTL meanwhile, and
// release only the fences of writes at or before the delete.
func TestFenceTableRemembersDeletesOnlyWhileReconciling(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	ft := newFenceTable[Key](&Fences{TTL: time.Minute}, clk)
	ft.logger = klog.Background()
	ft.requeue = func(Key, Trigger) {}
	tgt := &fenceTarget{name: "configmaps", lookup: func(string, string) (string, bool, bool) { return "", false, false }}
	ref := objRef{t: tgt, namespace: "ns", name: "cm"}
	key := Key{Namespace: "ns", Name: "owner"}

	ft.observe(ref, "5", true, true)
	assert.Zero(t, ft.remembered.Load(), "no Reconcile runs: a later write is newer than this delete")

	_, reconciled := ft.recorder(context.Background(), key)
	ft.observe(ref, "5", true, true)
	require.EqualValues(t, 1, ft.remembered.Load())
	assert.False(t, ft.add(key, tgt, "ns", "cm", "4", versionFence), "written before the delete the informer showed")
	assert.False(t, ft.add(key, tgt, "ns", "cm", "5", versionFence), "the delete's own version")
	assert.True(t, ft.add(key, tgt, "ns", "cm", "6", versionFence), "written after the delete: a new object the informer has not shown")
	ft.observe(ref, "6", false, false)
	assert.Zero(t, ft.open.Load(), "the new object's event released it")

	_, second := ft.recorder(context.Background(), key)
	reconciled()
	assert.EqualValues(t, 1, ft.remembered.Load(), "kept while a Reconcile still runs")
	clk.Step(time.Minute)
	ft.expire(clk.Now())
	assert.Zero(t, ft.remembered.Load(), "pruned after the TTL")

	ft.observe(ref, "", true, true) // a delete inferred on a relist: its version is unknown
	assert.False(t, ft.add(key, tgt, "ns", "cm", "9", versionFence), "a fence never waits on what it cannot judge")
	second()
	assert.Zero(t, ft.remembered.Load(), "dropped when the last Reconcile returned")
	assert.Nil(t, ft.deletes)
}
