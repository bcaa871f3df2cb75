package sharding

import (
	"maps"
	"slices"
	"strconv"
)

// Rendezvous (highest-random-weight) hashing: a key goes to the member with
// the highest score h(ring, member, key). The score must be the same in every
// process and release, so it is FNV-1a 64 (no per-process seed, unlike
// hash/maphash) followed by splitmix64's finaliser, which gives FNV's output
// the avalanche it lacks on keys that differ only in their last bytes.

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// fnv1a hashes the strings with a zero byte after each, so ("ab","c") and
// ("a","bc") differ.
func fnv1a(parts ...string) uint64 {
	h := uint64(fnvOffset)
	for _, s := range parts {
		for i := 0; i < len(s); i++ {
			h ^= uint64(s[i])
			h *= fnvPrime
		}
		h *= fnvPrime // the separator: h ^= 0 is a no-op, the multiply is not
	}
	return h
}

// mix is splitmix64's finaliser: a bijection on 64 bits where every input
// bit flips about half the output bits.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Ring hashes keys onto a fixed set of members with rendezvous hashing. Build
// one with NewRing (or NewWeightedRing) for each view of the membership; it is
// immutable and safe for concurrent use.
type Ring struct {
	name    string
	members []string
	// points are the members' scores' seeds: one per unit of weight, the
	// first the hash of (ring, member) and the others of (ring, member, i),
	// so a member of weight 1 scores as it always did and a member of weight
	// w is the best of w draws. Integer arithmetic only: every process, on
	// every architecture, computes the same owner.
	points []point
}

type point struct {
	member string
	seed   uint64
}

// MaxWeight is the largest weight a member may have (NewWeightedRing,
// Config.Weight): a member of weight w costs w hashes per key.
const MaxWeight = 100

// NewRing returns the ring named name over members (duplicates and empty
// names are ignored), each of weight 1. The order of members does not
// matter.
func NewRing(name string, members []string) *Ring {
	weights := make(map[string]int, len(members))
	for _, m := range members {
		weights[m] = 1
	}
	return NewWeightedRing(name, weights)
}

// NewWeightedRing returns the ring named name over the members of weights,
// each given about its weight's share of the keys: a member of weight 2 gets
// twice the keys of a member of weight 1. A weight below 1 counts as 1, one
// above MaxWeight as MaxWeight. Raising a member's weight from w to w+1
// (W the total) moves keys only to it, until it holds (w+1)/(W+1) of them;
// a ring whose members all weigh 1 assigns exactly as NewRing.
func NewWeightedRing(name string, weights map[string]int) *Ring {
	r := &Ring{name: name}
	for _, m := range slices.Sorted(maps.Keys(weights)) {
		if m == "" {
			continue
		}
		r.members = append(r.members, m)
		w := min(max(weights[m], 1), MaxWeight)
		r.points = append(r.points, point{member: m, seed: fnv1a(name, m)})
		for i := 1; i < w; i++ {
			r.points = append(r.points, point{member: m, seed: fnv1a(name, m, strconv.Itoa(i))})
		}
	}
	return r
}

// Members returns the ring's members, in no particular order.
func (r *Ring) Members() []string { return append([]string(nil), r.members...) }

// Owner returns the member key is assigned to, "" when the ring is empty.
// A key moves only when its owner leaves or a new member outscores the
// owner, so a join moves about 1/(N+1) of the keys and a leave moves only the
// leaver's.
func (r *Ring) Owner(key string) string {
	kh := fnv1a(key)
	best, bestScore := "", uint64(0)
	for _, p := range r.points {
		s := mix(kh ^ p.seed)
		// Ties (astronomically rare) go to the smaller name, so the answer
		// does not depend on the order members were given in.
		if best == "" || s > bestScore || (s == bestScore && p.member < best) {
			best, bestScore = p.member, s
		}
	}
	return best
}
