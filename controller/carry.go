package controller

import (
	"sync"
	"sync/atomic"

	"github.com/ctrlkit/ctrlkit/provenance"
)

// carried holds the reasons of keys a step held back and queued again (a write fence released,
// the breaker closed), until a worker takes the key: they join the reasons it comes back with
// (Options.Provenance).
type carried[K comparable] struct {
	n  atomic.Int64 // len(m): a take skips the lock when nothing is carried
	mu sync.Mutex
	m  map[K]provenance.Reasons
}

// put keeps why for key, merged with what it already carries.
func (c *carried[K]) put(key K, why provenance.Reasons) {
	if why.IsZero() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[K]provenance.Reasons{}
	}
	r := c.m[key]
	r.Merge(why)
	c.m[key] = r
	c.n.Store(int64(len(c.m)))
}

// take returns the reasons key carries, merged before why, and forgets them.
func (c *carried[K]) take(key K, why provenance.Reasons) provenance.Reasons {
	if c.n.Load() == 0 {
		return why
	}
	c.mu.Lock()
	r, ok := c.m[key]
	if ok {
		delete(c.m, key)
		c.n.Store(int64(len(c.m)))
	}
	c.mu.Unlock()
	if !ok {
		return why
	}
	r.Merge(why)
	return r
}

// reset forgets every key's reasons.
func (c *carried[K]) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.m)
	c.n.Store(0)
}
