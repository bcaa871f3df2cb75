package sharding

import (
	"maps"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/clock"
)

// liveness is the sharder's view of the ring: which member Leases it has
// seen renewed within LeaseDuration. As in client-go's leader election, a
// renewal is judged by the observer's clock (when the sharder saw the Lease
// change), never by the renew time written by another host's clock.
type liveness struct {
	ring     string
	duration time.Duration
	clock    clock.PassiveClock

	mu   sync.Mutex
	seen map[string]observation // by identity
}

type observation struct {
	version string // what changes on every renewal
	rv      uint64 // the resourceVersion as a number; 0 when it is not one
	holder  string
	at      time.Time // when this version was first observed
	deleted bool      // the Lease is gone: forget it once expired
	weight  int       // MemberWeight of the Lease
}

func newLiveness(ring string, duration time.Duration, clk clock.PassiveClock) *liveness {
	return &liveness{ring: ring, duration: duration, clock: clk, seen: map[string]observation{}}
}

// observe records a Lease as seen now if it changed since the last
// observation. A Lease not named <ring>.<identity> is ignored, and so is
// one older than the last observation: the sharder's reads and its watch
// race, so either may bring a state the other has already passed (a slow
// reply from before a new process acquired the Lease would show it
// released). Versions are compared as numbers, as etcd's revisions are;
// one that is not a number is taken as it comes.
func (l *liveness) observe(lease *coordinationv1.Lease) {
	id, ok := identityOf(l.ring, lease.Name)
	if !ok || id == "" {
		return
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	version := lease.ResourceVersion
	if rt := lease.Spec.RenewTime; rt != nil {
		// A renewal is a new renew time (in microseconds) of the holder; the
		// resourceVersion also changes with the slot annotations of a
		// server-side ring, which the sharder writes on any member Lease and
		// which are no sign of life.
		version = holder + "/" + rt.UTC().Format(time.RFC3339Nano)
	}
	rv, _ := parseRV(lease.ResourceVersion) // 0 when not a number
	l.mu.Lock()
	defer l.mu.Unlock()
	weight := MemberWeight(lease)
	if o, ok := l.seen[id]; ok && (o.version == version || rv != 0 && rv < o.rv) {
		if o.version == version && (rv == 0 || rv >= o.rv) && o.weight != weight {
			o.weight, o.rv = weight, rv // a new weight is no sign of life either
			l.seen[id] = o
		}
		return
	}
	l.seen[id] = observation{version: version, rv: rv, holder: holder, at: l.clock.Now(), weight: weight}
}

// forget handles a deleted Lease. A deletion is not a release: whoever
// deleted it, the member may still be running (it recreates its Lease on its
// next renewal), so it stays live until its last observed renewal is
// LeaseDuration old, and is forgotten then.
func (l *liveness) forget(lease *coordinationv1.Lease) {
	id, ok := identityOf(l.ring, lease.Name)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if o, ok := l.seen[id]; ok {
		o.deleted = true
		l.seen[id] = o
	}
}

// live returns the members whose Lease has a holder and was seen renewed
// within the lease duration, sorted.
func (l *liveness) live() []string {
	return slices.Sorted(maps.Keys(l.holders()))
}

// holders maps each live member (see live) to its Lease's holder.
func (l *liveness) holders() map[string]string {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]string{}
	for id, o := range l.seen {
		switch {
		case now.Sub(o.at) >= l.duration:
			if o.deleted {
				delete(l.seen, id)
			}
		case o.holder != "":
			out[id] = o.holder
		}
	}
	return out
}

// weights returns the weight of each member of live (holders' keys).
func (l *liveness) weights(live map[string]string) map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int, len(live))
	for id := range live {
		out[id] = max(l.seen[id].weight, 1)
	}
	return out
}

// snapshot is one view of the live members.
type snapshot struct {
	ring    *Ring
	live    map[string]string // member -> its Lease's holder
	weights map[string]int    // member -> its weight
	// mark is the childLists mark taken once live was computed: a LIST
	// started after it holds every child written by a member this view
	// finds stopped. 0 without children lists.
	mark uint64
}

// newSnapshot is the view of live (member -> holder), each member of its
// weight.
func newSnapshot(ring string, live map[string]string, weights map[string]int) snapshot {
	return snapshot{ring: NewWeightedRing(ring, weights), live: live, weights: weights}
}

func (s snapshot) members() []string { return slices.Sorted(maps.Keys(s.live)) }
