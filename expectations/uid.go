package expectations

import (
	"hash/maphash"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

type uidShard[K comparable] struct {
	mu   sync.Mutex
	uids map[K]sets.Set[types.UID]
	_    [112]byte // one shard per cache line pair, as in shard
}

// UIDTracking is an Expectations store whose deletions are tracked by object UID. A deletion
// can reach a controller twice (an update that sets deletionTimestamp, then the delete event
// or a DeletedFinalStateUnknown tombstone); counting UIDs instead of events makes the second
// sighting a no-op, so one graceful deletion cannot stand in for another pending one.
//
// Creations are counted as in Expectations. Change deletion counts only through
// ExpectDeletions and DeletionObserved here, so the UID set and the count stay in step.
//
// All methods are safe for concurrent use. Create one with NewUIDTracking.
type UIDTracking[K comparable] struct {
	counts *Expectations[K]
	seed   maphash.Seed
	shards [numShards]uidShard[K]
}

// NewUIDTracking returns an empty store; it takes the same options as New.
func NewUIDTracking[K comparable](opts ...Option) *UIDTracking[K] {
	u := &UIDTracking[K]{counts: newExpectations[K](newConfig(opts)), seed: maphash.MakeSeed()}
	for i := range u.shards {
		u.shards[i].uids = make(map[K]sets.Set[types.UID])
	}
	return u
}

func (u *UIDTracking[K]) shardFor(key K) *uidShard[K] {
	return &u.shards[maphash.Comparable(u.seed, key)%numShards]
}

// ExpectDeletions replaces the key's expectations with one pending deletion per distinct UID
// (and no pending creations, as ExpectDeletions does on Expectations).
func (u *UIDTracking[K]) ExpectDeletions(key K, uids []types.UID) {
	set := sets.New(uids...)
	s := u.shardFor(key)
	// Lock order, everywhere: UID shard, then the count shard inside u.counts.
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.uids[key]; old.Len() > 0 {
		// A new round replaced deletions never observed (they expired, or the controller
		// recomputed): worth a trace, since those UIDs are no longer waited for.
		if l := u.counts.logger.V(2); l.Enabled() {
			l.Info("Replacing pending deletion UIDs", "key", key, "pending", sets.List(old))
		}
	}
	s.uids[key] = set
	if l := u.counts.logger.V(4); l.Enabled() {
		l.Info("Expecting deletions", "key", key, "uids", sets.List(set))
	}
	u.counts.ExpectDeletions(key, set.Len())
}

// DeletionObserved records the deletion of the object with the given UID. Only a UID still in
// the key's expected set lowers the count, and it is then removed: a second sighting of the
// same deletion (event and tombstone) changes nothing.
func (u *UIDTracking[K]) DeletionObserved(key K, uid types.UID) {
	s := u.shardFor(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	set := s.uids[key]
	if !set.Has(uid) {
		return
	}
	set.Delete(uid)
	if l := u.counts.logger.V(4); l.Enabled() {
		l.Info("Observed deletion of expected UID", "key", key, "uid", uid)
	}
	u.counts.DeletionObserved(key)
}

// GetUIDs returns a copy of the UIDs whose deletion the key still waits for, or nil.
func (u *UIDTracking[K]) GetUIDs(key K) sets.Set[types.UID] {
	s := u.shardFor(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if set, ok := s.uids[key]; ok {
		return set.Clone()
	}
	return nil
}

// DeleteExpectations forgets the key: both its counts and its UID set.
func (u *UIDTracking[K]) DeleteExpectations(key K) {
	s := u.shardFor(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	u.counts.DeleteExpectations(key)
	delete(s.uids, key)
}

// ExpectCreations sets the key's expectations to n creations and no deletions; the UID set
// is kept (its UIDs can still be observed, which only drives the deletion count below zero).
func (u *UIDTracking[K]) ExpectCreations(key K, n int) { u.counts.ExpectCreations(key, n) }

// CreationObserved records one observed creation.
func (u *UIDTracking[K]) CreationObserved(key K) { u.counts.CreationObserved(key) }

// LowerExpectations subtracts from the pending counts, e.g. add for creations that failed.
// Use it for deletions only for deletes that failed and whose UID is unknown; otherwise call
// DeletionObserved with the UID so the set stays in step.
func (u *UIDTracking[K]) LowerExpectations(key K, add, del int) {
	u.counts.LowerExpectations(key, add, del)
}

// RaiseExpectations adds to the pending counts.
func (u *UIDTracking[K]) RaiseExpectations(key K, add, del int) {
	u.counts.RaiseExpectations(key, add, del)
}

// Get returns the key's pending counts and whether a record exists.
func (u *UIDTracking[K]) Get(key K) (add, del int64, exists bool) { return u.counts.Get(key) }

// Satisfied reports whether the controller may act on the key, as Expectations.Satisfied.
func (u *UIDTracking[K]) Satisfied(key K) bool { return u.counts.Satisfied(key) }

// Len returns the number of keys with a count record.
func (u *UIDTracking[K]) Len() int { return u.counts.Len() }
