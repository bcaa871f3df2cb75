package sharding

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
// one with NewRing for each view of the membership; it is immutable and safe
// for concurrent use.
type Ring struct {
	name    string
	members []string
	seeds   []uint64 // hash of (ring, member), per member
}

// NewRing returns the ring named name over members (duplicates and empty
// names are ignored). The order of members does not matter.
func NewRing(name string, members []string) *Ring {
	r := &Ring{name: name}
	seen := make(map[string]bool, len(members))
	for _, m := range members {
		if m == "" || seen[m] {
			continue
		}
		seen[m] = true
		r.members = append(r.members, m)
		r.seeds = append(r.seeds, fnv1a(name, m))
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
	for i, m := range r.members {
		s := mix(kh ^ r.seeds[i])
		// Ties (astronomically rare) go to the smaller name, so the answer
		// does not depend on the order members were given in.
		if best == "" || s > bestScore || (s == bestScore && m < best) {
			best, bestScore = m, s
		}
	}
	return best
}
