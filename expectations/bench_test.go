package expectations_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/expectations"
)

const benchKeys = 10_000

func benchKeyList() []string {
	keys := make([]string, benchKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("namespace-%d/replicaset-%d", i%50, i)
	}
	return keys
}

// parallel8 runs body on 8 goroutines whatever GOMAXPROCS is (RunParallel starts
// parallelism × GOMAXPROCS goroutines), each starting at a different key offset.
func parallel8(b *testing.B, body func(next func() int)) {
	p := (8 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0)
	b.SetParallelism(p)
	var start atomic.Int64
	b.ReportAllocs()
	cpu0, cpuOK := processCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(start.Add(1)) * 7919
		body(func() int {
			if !pb.Next() {
				return -1
			}
			i++
			return i % benchKeys
		})
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	if cpu1, ok := processCPU(); ok && cpuOK && cpu1 > cpu0 {
		// Throughput per CPU-second consumed: ×GOMAXPROCS is what dedicated cores would give.
		b.ReportMetric(float64(b.N)/(cpu1-cpu0).Seconds(), "ops/cpu-s")
	}
}

// BenchmarkMixed is the controller's cycle per key, one operation per iteration:
// ExpectCreations(key, 2), CreationObserved twice, Satisfied.
func BenchmarkMixed(b *testing.B) {
	e := expectations.New[string]()
	keys := benchKeyList()
	for _, k := range keys {
		e.ExpectCreations(k, 2)
	}
	parallel8(b, func(next func() int) {
		for n := 0; ; n++ {
			i := next()
			if i < 0 {
				return
			}
			k := keys[i]
			switch n % 4 {
			case 0:
				e.ExpectCreations(k, 2)
			case 1, 2:
				e.CreationObserved(k)
			default:
				e.Satisfied(k)
			}
		}
	})
}

// BenchmarkCreationObserved is the informer hot path on keys that have a record.
func BenchmarkCreationObserved(b *testing.B) {
	e := expectations.New[string]()
	keys := benchKeyList()
	for _, k := range keys {
		e.ExpectCreations(k, 1<<40)
	}
	parallel8(b, func(next func() int) {
		for i := next(); i >= 0; i = next() {
			e.CreationObserved(keys[i])
		}
	})
}

func BenchmarkSatisfied(b *testing.B) {
	e := expectations.New[string]()
	keys := benchKeyList()
	for _, k := range keys {
		e.ExpectCreations(k, 1)
	}
	parallel8(b, func(next func() int) {
		for i := next(); i >= 0; i = next() {
			e.Satisfied(keys[i])
		}
	})
}

func BenchmarkExpectCreations(b *testing.B) {
	e := expectations.New[string]()
	keys := benchKeyList()
	for _, k := range keys {
		e.ExpectCreations(k, 1)
	}
	parallel8(b, func(next func() int) {
		for i := next(); i >= 0; i = next() {
			e.ExpectCreations(keys[i], 3)
		}
	})
}

// BenchmarkMixedNamespacedName is BenchmarkMixed with a struct key, as controllers keyed by
// types.NamespacedName use.
func BenchmarkMixedNamespacedName(b *testing.B) {
	e := expectations.New[types.NamespacedName]()
	keys := make([]types.NamespacedName, benchKeys)
	for i := range keys {
		keys[i] = types.NamespacedName{Namespace: fmt.Sprintf("namespace-%d", i%50), Name: fmt.Sprintf("replicaset-%d", i)}
		e.ExpectCreations(keys[i], 2)
	}
	parallel8(b, func(next func() int) {
		for n := 0; ; n++ {
			i := next()
			if i < 0 {
				return
			}
			switch n % 4 {
			case 0:
				e.ExpectCreations(keys[i], 2)
			case 1, 2:
				e.CreationObserved(keys[i])
			default:
				e.Satisfied(keys[i])
			}
		}
	})
}

// BenchmarkUIDDeletionObserved: the UID store's observe path (a set lookup under the key's
// shard lock); the UID is not expected, so the store does not drain during the run.
func BenchmarkUIDDeletionObserved(b *testing.B) {
	u := expectations.NewUIDTracking[string]()
	keys := benchKeyList()
	for _, k := range keys {
		u.ExpectDeletions(k, []types.UID{"a", "b", "c"})
	}
	parallel8(b, func(next func() int) {
		for i := next(); i >= 0; i = next() {
			u.DeletionObserved(keys[i], "not-expected")
		}
	})
}

// TestObserveDoesNotAllocate pins the 0-allocation promise for observing an existing key
// (counts allocations, not time).
func TestObserveDoesNotAllocate(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage instrumentation allocates")
	}
	e := expectations.New[string]()
	e.ExpectCreations("ns/a", 1<<40)
	e.SetExpectations("ns/b", 1<<40, 1<<40)
	nn := expectations.New[types.NamespacedName]()
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	nn.ExpectCreations(key, 1<<40)
	allocs := testing.AllocsPerRun(1000, func() {
		e.CreationObserved("ns/a")
		e.DeletionObserved("ns/b")
		e.Satisfied("ns/a")
		e.ExpectCreations("ns/a", 1<<40) // re-set of an existing key is in place
		nn.CreationObserved(key)
		nn.Satisfied(key)
	})
	if allocs != 0 {
		t.Fatalf("observe/satisfied/re-set on existing keys allocate %v times per run, want 0", allocs)
	}
}
