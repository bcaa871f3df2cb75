//go:build !wqmap

package workqueue

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTableMatchesAMap runs random puts and removes against a Go map, through growth, shrinking
// and probe runs that wrap around the end of the slot array, checking every key after each step
// batch and that removals leave no trace.
func TestTableMatchesAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	tab := newTable[string]()
	ref := map[string]*entry[string]{}
	keys := make([]string, 20_000)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
	}
	check := func() {
		t.Helper()
		require.Equal(t, len(ref), tab.len())
		for _, k := range keys[:2000] {
			got := tab.get(tab.hash(k), k)
			require.Equal(t, ref[k], got, "key %s", k)
		}
	}
	for round := range 6 {
		// Grow to many keys, then shrink to few: the table resizes both ways.
		target := 100 + rng.IntN(len(keys))
		if round%2 == 1 {
			target = rng.IntN(50)
		}
		for steps := 0; steps < 40_000; steps++ {
			k := keys[rng.IntN(len(keys))]
			if e, ok := ref[k]; ok && (len(ref) > target || rng.IntN(3) == 0) {
				tab.remove(e)
				delete(ref, k)
			} else if !ok && len(ref) < target {
				e := &entry[string]{item: k, h: tab.hash(k)}
				tab.put(e)
				ref[k] = e
			}
			if steps%5000 == 0 {
				check()
			}
		}
		check()
	}
	for _, e := range ref {
		tab.remove(e)
	}
	require.Zero(t, tab.len())
	for _, s := range tab.slots {
		require.Nil(t, s.e)
	}
	require.LessOrEqual(t, len(tab.slots), keepTable)
}

// TestTableCollidingHashes forces every key into one probe run, so that backward-shift deletion
// is exercised on runs that wrap around.
func TestTableCollidingHashes(t *testing.T) {
	tab := newTable[int]()
	ref := map[int]*entry[int]{}
	rng := rand.New(rand.NewPCG(5, 6))
	for step := range 20_000 {
		k := rng.IntN(12)
		if e, ok := ref[k]; ok {
			tab.remove(e)
			delete(ref, k)
		} else {
			// Homes near the end of the array make runs wrap; h is not the real hash, so look
			// up by probing with the same h.
			e := &entry[int]{item: k, h: uint64(14 + k%3)}
			tab.put(e)
			ref[k] = e
		}
		for k, e := range ref {
			require.Same(t, e, tab.get(e.h, k), "step %d key %d", step, k)
		}
		require.Equal(t, len(ref), tab.len())
	}
}
