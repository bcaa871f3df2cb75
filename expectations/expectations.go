package expectations

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// numShards splits the key space so that workers on unrelated keys take unrelated locks. 64 is
// well above the worker count of any controller while keeping the fixed footprint small (8 KiB).
const numShards = 64

// record is the pending work of one key. The counters are atomics so that observing an event
// (the hot path, once per informer event) needs only the shard's read lock; stamp changes only
// under the shard's write lock, so readers holding the read lock see a consistent value.
type record struct {
	add atomic.Int64
	del atomic.Int64
	// stamp is when the record was set, as an offset from the store's base time: with the real
	// clock, clock.Since(base) reads only the monotonic clock, which is cheaper than
	// clock.Now() (docs/performance.md has the figures), and it is immune to wall-clock steps.
	stamp time.Duration
}

type shard[K comparable] struct {
	mu      sync.RWMutex
	records map[K]*record
	// Keep neighbouring shards' locks on different cache lines (a shard is 32 bytes
	// otherwise): two workers on different shards must not bounce one line between cores.
	_ [96]byte
}

// Expectations records, per key (usually the controller object's key), how many creations and
// deletions the controller has asked the API server for and not yet seen in its informer
// cache. While a key has outstanding expectations its cache is known to be stale, and the
// controller should not act on it again (it would create the same children twice).
//
// All methods are safe for concurrent use. Create one with New; the zero value is not usable.
type Expectations[K comparable] struct {
	ttl    time.Duration
	clock  clock.PassiveClock
	logger klog.Logger
	base   time.Time
	seed   maphash.Seed
	shards [numShards]shard[K]
}

// New returns an empty store. Options set the TTL (DefaultTTL), clock and logger.
func New[K comparable](opts ...Option) *Expectations[K] {
	return newExpectations[K](newConfig(opts))
}

func newExpectations[K comparable](c config) *Expectations[K] {
	e := &Expectations[K]{ttl: c.ttl, clock: c.clock, logger: c.logger, base: c.clock.Now(), seed: maphash.MakeSeed()}
	for i := range e.shards {
		e.shards[i].records = make(map[K]*record)
	}
	return e
}

// TTL returns the age after which a record no longer blocks Satisfied.
func (e *Expectations[K]) TTL() time.Duration { return e.ttl }

func (e *Expectations[K]) shardFor(key K) *shard[K] {
	return &e.shards[maphash.Comparable(e.seed, key)%numShards]
}

// lookup returns the key's record while holding the shard's read lock; the caller must
// call s.mu.RUnlock.
func (e *Expectations[K]) lookup(key K) (*shard[K], *record) {
	s := e.shardFor(key)
	s.mu.RLock()
	return s, s.records[key]
}

// SetExpectations replaces whatever the key had with add pending creations and del pending
// deletions, stamped now. Replacing (rather than adding to) the record is what keeps a key
// that observed more events than it expected (negative counts) from blocking the next round.
func (e *Expectations[K]) SetExpectations(key K, add, del int) {
	now := e.clock.Since(e.base)
	s := e.shardFor(key)
	s.mu.Lock()
	r := s.records[key]
	if r == nil {
		r = &record{}
		s.records[key] = r
	}
	// In place: observers only touch the counters under the read lock, which this write lock
	// excludes, so a re-set costs no allocation.
	r.add.Store(int64(add))
	r.del.Store(int64(del))
	r.stamp = now
	s.mu.Unlock()
	if l := e.logger.V(4); l.Enabled() {
		l.Info("Setting expectations", "key", key, "add", add, "del", del)
	}
}

// ExpectCreations sets the key's expectations to n creations and no deletions.
func (e *Expectations[K]) ExpectCreations(key K, n int) { e.SetExpectations(key, n, 0) }

// ExpectDeletions sets the key's expectations to n deletions and no creations.
func (e *Expectations[K]) ExpectDeletions(key K, n int) { e.SetExpectations(key, 0, n) }

// CreationObserved records that one expected creation was seen. Without a record it does
// nothing. It does not allocate.
func (e *Expectations[K]) CreationObserved(key K) { e.adjust(key, -1, 0, "Observed creation") }

// DeletionObserved records that one expected deletion was seen. Without a record it does
// nothing. It does not allocate.
func (e *Expectations[K]) DeletionObserved(key K) { e.adjust(key, 0, -1, "Observed deletion") }

// LowerExpectations subtracts add and del from the pending counts, e.g. for creations that
// failed and will never be observed. Without a record it does nothing; the timestamp is kept.
func (e *Expectations[K]) LowerExpectations(key K, add, del int) {
	e.adjust(key, -int64(add), -int64(del), "Lowered expectations")
}

// RaiseExpectations adds add and del to the pending counts. Without a record it does nothing;
// the timestamp is kept.
func (e *Expectations[K]) RaiseExpectations(key K, add, del int) {
	e.adjust(key, int64(add), int64(del), "Raised expectations")
}

func (e *Expectations[K]) adjust(key K, add, del int64, msg string) {
	s, r := e.lookup(key)
	if r == nil {
		s.mu.RUnlock()
		return
	}
	var a, d int64
	if add != 0 {
		a = r.add.Add(add)
	} else {
		a = r.add.Load()
	}
	if del != 0 {
		d = r.del.Add(del)
	} else {
		d = r.del.Load()
	}
	s.mu.RUnlock()
	if l := e.logger.V(4); l.Enabled() {
		l.Info(msg, "key", key, "add", a, "del", d)
	}
}

// DeleteExpectations forgets the key (call it when the controller object is deleted, so the
// store does not keep records of objects that are gone).
func (e *Expectations[K]) DeleteExpectations(key K) {
	s := e.shardFor(key)
	s.mu.Lock()
	_, ok := s.records[key]
	delete(s.records, key)
	s.mu.Unlock()
	if ok {
		if l := e.logger.V(4); l.Enabled() {
			l.Info("Deleted expectations", "key", key)
		}
	}
}

// Get returns the key's pending counts and whether a record exists. Counts may be negative
// when more events were observed than expected.
func (e *Expectations[K]) Get(key K) (add, del int64, exists bool) {
	s, r := e.lookup(key)
	if r != nil {
		add, del, exists = r.add.Load(), r.del.Load(), true
	}
	s.mu.RUnlock()
	return add, del, exists
}

// Satisfied reports whether the controller may act on the key's cached state: true when the
// key has no record, when every expected creation and deletion was observed (both counts
// <= 0), or when the record is older than the TTL (an event was lost; resync rather than wait
// forever). An expired record is kept: it still counts events until it is set again or
// deleted, as in kube-controller-manager.
func (e *Expectations[K]) Satisfied(key K) bool {
	s, r := e.lookup(key)
	if r == nil {
		s.mu.RUnlock()
		if l := e.logger.V(4); l.Enabled() {
			l.Info("No expectations recorded", "key", key)
		}
		return true
	}
	add, del, stamp := r.add.Load(), r.del.Load(), r.stamp
	s.mu.RUnlock()
	if add <= 0 && del <= 0 {
		if l := e.logger.V(4); l.Enabled() {
			l.Info("Expectations satisfied", "key", key, "add", add, "del", del)
		}
		return true
	}
	if age := e.clock.Since(e.base) - stamp; age > e.ttl {
		if l := e.logger.V(4); l.Enabled() {
			l.Info("Expectations expired", "key", key, "add", add, "del", del, "age", age, "ttl", e.ttl)
		}
		return true
	}
	if l := e.logger.V(4); l.Enabled() {
		l.Info("Still waiting on expectations", "key", key, "add", add, "del", del)
	}
	return false
}

// Len returns the number of keys with a record (expired ones included).
func (e *Expectations[K]) Len() int {
	n := 0
	for i := range e.shards {
		s := &e.shards[i]
		s.mu.RLock()
		n += len(s.records)
		s.mu.RUnlock()
	}
	return n
}
