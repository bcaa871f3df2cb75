//go:build !wqmap

package workqueue

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTableMatchesAMap runs random inserts and deletes against a Go map, through growth,
// shrinking and probe runs that wrap around the end of the slot array, checking every key after
// each step batch and that deletions leave no trace.
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
		require.Equal(t, len(ref), tab.arena.n)
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
				tab.delete(e)
				delete(ref, k)
			} else if !ok && len(ref) < target {
				e := tab.insert(k, tab.hash(k))
				require.NotNil(t, e)
				require.Equal(t, k, e.item)
				ref[k] = e
			}
			if steps%5000 == 0 {
				check()
			}
		}
		check()
	}
	for _, e := range ref {
		tab.delete(e)
	}
	require.Zero(t, tab.len())
	for _, s := range tab.slots {
		require.Zero(t, s)
	}
	require.LessOrEqual(t, len(tab.slots), keepTable)
}

// TestTableCollidingHashes forces every key into two neighbouring probe runs at the end of the
// slot array, so that backward-shift deletion is exercised on runs that wrap around.
func TestTableCollidingHashes(t *testing.T) {
	tab := newTable[int]()
	type kept struct {
		e *entry[int]
		h uint64
	}
	ref := map[int]kept{}
	rng := rand.New(rand.NewPCG(5, 6))
	for step := range 20_000 {
		k := rng.IntN(12)
		if r, ok := ref[k]; ok {
			tab.delete(r.e)
			delete(ref, k)
		} else {
			// 12 keys fit a table of 16 slots, whose home is the tag's top 4 bits: homes 14
			// and 15 make the runs wrap. h is not the real hash, so look up with the same h.
			h := uint64(14+k%2)<<60 | uint64(k+1)<<32
			ref[k] = kept{tab.insert(k, h), h}
		}
		for k, r := range ref {
			require.Same(t, r.e, tab.get(r.h, k), "step %d key %d", step, k)
		}
		require.Equal(t, len(ref), tab.len())
		require.Len(t, tab.slots, minTable)
	}
}

// TestTagIsNeverZero checks that a hash whose high half is zero still gets a full slot.
func TestTagIsNeverZero(t *testing.T) {
	tab := newTable[int]()
	e := tab.insert(7, 42) // tag 0 before the fix-up
	require.Same(t, e, tab.get(42, 7))
	require.Equal(t, 1, tab.len())
	tab.delete(e)
	require.Nil(t, tab.get(42, 7))
}
