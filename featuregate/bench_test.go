package featuregate_test

import (
	"sync/atomic"
	"testing"

	"github.com/ctrlkit/ctrlkit/featuregate"
)

// sink keeps the compiler from dropping the reads.
var sink bool

// BenchmarkEnabled is the hot path: one lookup in a gate with 100 registered features.
func BenchmarkEnabled(b *testing.B) {
	g, names := hundredFeatures(b)
	g.Freeze()
	f := names[57]
	b.ReportAllocs()
	for b.Loop() {
		sink = g.Enabled(f)
	}
}

// BenchmarkEnabledParallel reads from every P at once: no lock, no shared writes, so the
// per-op cost should match BenchmarkEnabled.
func BenchmarkEnabledParallel(b *testing.B) {
	g, names := hundredFeatures(b)
	g.Freeze()
	f := names[57]
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		v := false
		for pb.Next() {
			v = v != g.Enabled(f)
		}
		sink = v
	})
}

// BenchmarkEnabledAllFeatures reads the 100 features in turn (different keys, different
// map slots) rather than one hot key.
func BenchmarkEnabledAllFeatures(b *testing.B) {
	g, names := hundredFeatures(b)
	g.Freeze()
	b.ReportAllocs()
	i, v := 0, false
	for b.Loop() {
		v = v != g.Enabled(names[i])
		if i++; i == len(names) {
			i = 0
		}
	}
	sink = v
}

// BenchmarkEnabledGates goes through the Gates interface, as manager.Manager does.
func BenchmarkEnabledGates(b *testing.B) {
	g, names := hundredFeatures(b)
	var gates featuregate.Gates = g
	f := names[57]
	b.ReportAllocs()
	for b.Loop() {
		sink = gates.Enabled(f)
	}
}

// BenchmarkEnabledUnknown is the slow path for an unregistered name (after its one report).
func BenchmarkEnabledUnknown(b *testing.B) {
	g, _ := hundredFeatures(b)
	g.Enabled("NotRegistered")
	b.ReportAllocs()
	for b.Loop() {
		sink = g.Enabled("NotRegistered")
	}
}

// BenchmarkSet is a mutation: parse, validate and publish a new snapshot of 100 features.
func BenchmarkSet(b *testing.B) {
	g, names := hundredFeatures(b)
	on, off := string(names[1])+"=true", string(names[1])+"=false"
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		v := on
		if i%2 == 1 {
			v = off
		}
		if err := g.Set(v); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkBaselineMapLookup is the floor Enabled is compared with in docs/performance.md:
// an atomic pointer load and a map lookup, inlined, with nothing else. On a shared machine
// the absolute numbers move a lot; the ratio to BenchmarkEnabled is what to look at.
func BenchmarkBaselineMapLookup(b *testing.B) {
	_, names := hundredFeatures(b)
	m := make(map[featuregate.Feature]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	var p atomic.Pointer[map[featuregate.Feature]bool]
	p.Store(&m)
	f := names[57]
	b.ReportAllocs()
	for b.Loop() {
		sink = (*p.Load())[f]
	}
}

// BenchmarkBaselineMapLookupParallel is the parallel floor: if it scales no better than
// BenchmarkEnabledParallel, what limits both is the machine, not the gate.
func BenchmarkBaselineMapLookupParallel(b *testing.B) {
	_, names := hundredFeatures(b)
	m := make(map[featuregate.Feature]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	var p atomic.Pointer[map[featuregate.Feature]bool]
	p.Store(&m)
	f := names[57]
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		v := false
		for pb.Next() {
			v = v != (*p.Load())[f]
		}
		sink = v
	})
}
