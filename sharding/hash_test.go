package sharding

import (
	"fmt"
	"hash/fnv"
	"math"
	"testing"
)

func keys(n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = fmt.Sprintf("namespace-%d/object-%d", i%7, i)
	}
	return ks
}

func members(n int) []string {
	ms := make([]string, n)
	for i := range ms {
		ms[i] = fmt.Sprintf("controller-7d9f8b6c5-%c%c", 'a'+i, 'k'+i)
	}
	return ms
}

// Scores are fixed across processes and releases: these values are part of
// the protocol (two releases of a ring must agree on every assignment).
func TestOwnerIsStable(t *testing.T) {
	r := NewRing("ring", []string{"a", "b", "c"})
	got := []string{r.Owner("ns/x"), r.Owner("ns/y"), r.Owner("ns/z"), r.Owner("x")}
	want := []string{"a", "c", "c", "b"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("owners %v, want %v: the hash changed, which would reassign keys across an upgrade", got, want)
		}
	}
	if NewRing("ring", []string{"c", "a", "b"}).Owner("ns/x") != got[0] {
		t.Error("member order changed an assignment")
	}
	if NewRing("ring", nil).Owner("k") != "" {
		t.Error("empty ring has an owner")
	}
}

// fnv1a is FNV-1a 64 of each part followed by a zero byte, as hash/fnv
// computes it: the scores can be reproduced in any language.
func TestFNVIsTheStandardOne(t *testing.T) {
	h := fnv.New64a()
	_, _ = h.Write([]byte("ring\x00member\x00"))
	if got, want := fnv1a("ring", "member"), h.Sum64(); got != want {
		t.Fatalf("fnv1a = %#x, hash/fnv = %#x", got, want)
	}
}

func TestDistributionWithinNoise(t *testing.T) {
	const n = 30000
	ks := keys(n)
	for size := 3; size <= 10; size++ {
		r := NewRing("ring", members(size))
		counts := map[string]int{}
		for _, k := range ks {
			counts[r.Owner(k)]++
		}
		mean := float64(n) / float64(size)
		sd := math.Sqrt(mean * (1 - 1/float64(size)))
		for m, c := range counts {
			if math.Abs(float64(c)-mean) > 5*sd {
				t.Errorf("%d members: %s owns %d keys, mean %.0f ± %.0f", size, m, c, mean, sd)
			}
		}
		if len(counts) != size {
			t.Errorf("%d members: only %d own keys", size, len(counts))
		}
	}
}

func TestJoinMovesAboutOneInNPlusOne(t *testing.T) {
	const n = 30000
	ks := keys(n)
	for size := 3; size <= 9; size++ {
		ms := members(size + 1)
		before, after := NewRing("ring", ms[:size]), NewRing("ring", ms)
		moved := 0
		for _, k := range ks {
			b, a := before.Owner(k), after.Owner(k)
			if b != a {
				moved++
				if a != ms[size] {
					t.Fatalf("key %s moved from %s to %s, not to the joiner", k, b, a)
				}
			}
		}
		want := float64(n) / float64(size+1)
		if sd := math.Sqrt(want); math.Abs(float64(moved)-want) > 5*sd {
			t.Errorf("join to %d members moved %d keys, want about %.0f", size+1, moved, want)
		}
	}
}

func TestLeaveMovesOnlyTheLeaversKeys(t *testing.T) {
	ks := keys(20000)
	ms := members(5)
	before := NewRing("ring", ms)
	after := NewRing("ring", append(append([]string(nil), ms[:2]...), ms[3:]...))
	for _, k := range ks {
		b, a := before.Owner(k), after.Owner(k)
		if b != ms[2] && a != b {
			t.Fatalf("key %s moved from %s to %s though %s left", k, b, a, ms[2])
		}
		if a == ms[2] {
			t.Fatalf("key %s still with the leaver", k)
		}
	}
}

func TestRingsAreIndependent(t *testing.T) {
	ks := keys(3000)
	a, b := NewRing("one", members(3)), NewRing("two", members(3))
	same := 0
	for _, k := range ks {
		if a.Owner(k) == b.Owner(k) {
			same++
		}
	}
	// Two rings of 3 agree on about a third of the keys, not all of them.
	if same > len(ks)/2 {
		t.Errorf("rings one and two agree on %d of %d keys", same, len(ks))
	}
}

func BenchmarkOwner(b *testing.B) {
	for _, size := range []int{3, 10, 50} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			r := NewRing("ring", members(size))
			ks := keys(1024)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				_ = r.Owner(ks[i%len(ks)])
			}
		})
	}
}
