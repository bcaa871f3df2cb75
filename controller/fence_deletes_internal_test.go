package controller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/provenance"
)

// The deletes an informer shows are remembered only while a Reconcile runs (only its writes
// can predate them), dropped when the last one returns, pruned after the TTL meanwhile, and
// release only the fences of writes at or before the delete.
func TestFenceTableRemembersDeletesOnlyWhileReconciling(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	ft := newFenceTable[Key](&Fences{TTL: time.Minute}, clk)
	ft.logger = klog.Background()
	ft.requeue = func(Key, provenance.Trigger) {}
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
	assert.True(t, ft.add(key, tgt, "ns", "cm", "9", versionFence),
		"a write after a delete of unknown version may re-create the object: it is fenced")
	second()
	assert.Zero(t, ft.remembered.Load(), "dropped when the last Reconcile returned")
	assert.Nil(t, ft.deletes)
}

// A Run that ends keeps its open fences for the next (a Lease won right back): the keys held
// for the old queue are let go, the release handler is registered again, and each fence is
// judged against the cache, which may have shown the write while nothing watched.
func TestFenceTableKeepsOpenFencesForTheNextTerm(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	ft := newFenceTable[Key](&Fences{TTL: time.Minute}, clk)
	ft.logger = klog.Background()
	ft.requeue = func(Key, provenance.Trigger) {}
	cache := map[string]string{"a": "1", "b": "1"}
	registered := 0
	tgt := &fenceTarget{
		name: "configmaps", id: "configmaps",
		lookup: func(_, name string) (string, bool, bool) { rv, ok := cache[name]; return rv, false, ok },
		register: func(func(namespace, name, rv string, deleting, deleted bool)) (func() error, error) {
			registered++
			return func() error { return nil }, nil
		},
	}
	ft.declare(tgt, false)
	a, b := Key{Namespace: "ns", Name: "a"}, Key{Namespace: "ns", Name: "b"}
	require.True(t, ft.add(a, tgt, "ns", "a", "5", versionFence))
	require.True(t, ft.add(b, tgt, "ns", "b", "5", versionFence))
	require.True(t, ft.hold(a, provenance.Reasons{}))

	ft.unregister()
	assert.Zero(t, ft.heldKeys(), "nothing is held for a queue that is gone")
	cache["a"] = "5" // the cache caught up with a's write while no handler watched
	var requeued []Key
	ft.nextTerm(klog.Background(), nil, func(k Key, _ provenance.Trigger) { requeued = append(requeued, k) })
	assert.Equal(t, 2, registered, "the release handler is registered again")
	assert.False(t, ft.hold(a, provenance.Reasons{}), "a's write is in the cache: released")
	assert.True(t, ft.hold(b, provenance.Reasons{}), "b's write is not: the new term waits for it")
	assert.Empty(t, requeued, "the new term's watches queue the keys; nothing was held")
}

// A target whose watch ended is forgotten: its release handler removed, its fences dropped
// (a held key queued again), its remembered deletes pruned; a declared one is kept.
func TestFenceTableForgetsATargetWhoseWatchEnded(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	ft := newFenceTable[Key](&Fences{TTL: time.Minute}, clk)
	ft.logger = klog.Background()
	var requeued []Key
	ft.requeue = func(k Key, _ provenance.Trigger) { requeued = append(requeued, k) }
	removed := 0
	mk := func(name string) *fenceTarget {
		return &fenceTarget{name: name, id: name,
			lookup: func(string, string) (string, bool, bool) { return "", false, false },
			register: func(func(string, string, string, bool, bool)) (func() error, error) {
				return func() error { removed++; return nil }, nil
			}}
	}
	dyn := ft.target("east/configmaps", func() *fenceTarget { return mk("east/configmaps") })
	declared := mk("hub/configmaps")
	ft.declare(declared, false)
	key, other := Key{Namespace: "ns", Name: "a"}, Key{Namespace: "ns", Name: "b"}
	require.True(t, ft.add(key, dyn, "ns", "cm", "5", versionFence))
	require.True(t, ft.add(other, declared, "ns", "cm", "5", versionFence))
	ft.mu.Lock()
	ft.keys[key].held = true
	ft.held++
	ft.mu.Unlock()
	_, done := ft.recorder(context.Background(), key)
	ft.observe(objRef{t: dyn, namespace: "ns", name: "gone"}, "4", true, true)
	done()

	ft.forget("east/configmaps")
	assert.Equal(t, 1, removed, "the release handler is removed")
	assert.Equal(t, []Key{key}, requeued, "the held key is queued again")
	assert.NotContains(t, ft.targets, "east/configmaps")
	ft.mu.Lock()
	for ref := range ft.objs {
		assert.NotSame(t, dyn, ref.t, "a fence on the forgotten target is left")
	}
	assert.Contains(t, ft.keys, other)
	assert.Zero(t, ft.held)
	ft.mu.Unlock()

	ft.forget("hub/configmaps")
	assert.Contains(t, ft.targets, "hub/configmaps", "a Watch's target stays")
	ft.unregister()
	assert.Equal(t, 2, removed, "the declared target's handler is removed at the end of the Run, once")
}
