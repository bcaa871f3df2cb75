package sharding

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// The children barrier: before the new owner of a key reconciles it, each of
// its child informers must have delivered the newest child relabel the
// sharder made for that key. The annotation holds one resourceVersion per
// child resource, "pods=812,replicasets.apps=815", because a watch only
// passes the versions of its own resource: a resource with no relabel must
// not be waited for.
//
// Comparing resourceVersions as numbers relies on the API server's etcd
// storage (one increasing revision); ctrlkit's fake cluster stamps versions
// the same way. A version that does not parse never holds a key back.

// barrier maps a child resource (GroupResource.String()) to a resourceVersion.
type barrier map[string]uint64

func (f barrier) String() string {
	parts := make([]string, 0, len(f))
	for _, r := range slices.Sorted(maps.Keys(f)) {
		parts = append(parts, r+"="+strconv.FormatUint(f[r], 10))
	}
	return strings.Join(parts, ",")
}

// parseBarrier reads the annotation; entries that do not parse are skipped.
func parseBarrier(s string) barrier {
	if s == "" {
		return nil
	}
	f := barrier{}
	for part := range strings.SplitSeq(s, ",") {
		r, v, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(v, 10, 64); err == nil && r != "" {
			f[r] = n
		}
	}
	return f
}

func (f barrier) raise(resource, rv string) {
	if n, ok := parseRV(rv); ok && n > f[resource] {
		f[resource] = n
	}
}

func parseRV(rv string) (uint64, bool) {
	n, err := strconv.ParseUint(rv, 10, 64)
	return n, err == nil
}

// rvTracker is the newest resourceVersion one informer has delivered to a
// handler of ours: once it has delivered v, its cache holds every object of
// its watch at v or newer (a watch is ordered by resourceVersion, and the
// cache is updated before handlers are called).
type rvTracker struct {
	resource string
	seen     atomic.Uint64
	onRaise  func()
}

func (t *rvTracker) observe(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	n, ok := parseRV(m.GetResourceVersion())
	if !ok {
		return
	}
	for {
		cur := t.seen.Load()
		if n <= cur {
			return
		}
		if t.seen.CompareAndSwap(cur, n) {
			if t.onRaise != nil {
				t.onRaise()
			}
			return
		}
	}
}

// handler is the tracker as a client-go handler. A child informer comes as a
// Source, whose object type the dispatcher does not know, so it cannot take
// a typed informer.Handler: observe unwraps tombstones itself and reads
// only the resourceVersion, which every object (of any type) has.
func (t *rvTracker) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.observe(obj) },
		UpdateFunc: func(_, obj any) { t.observe(obj) },
		DeleteFunc: func(obj any) { t.observe(obj) },
	}
}

// passed reports whether every tracker has delivered its resource's version
// in f (resources f does not name, and f's resources no tracker follows, do
// not count).
func passed(f barrier, trackers []*rvTracker) bool {
	for _, t := range trackers {
		if v, ok := f[t.resource]; ok && t.seen.Load() < v {
			return false
		}
	}
	return true
}

// describe names what a barrier still waits for, for logs.
func describe(f barrier, trackers []*rvTracker) string {
	var b strings.Builder
	for _, t := range trackers {
		if v, ok := f[t.resource]; ok && t.seen.Load() < v {
			fmt.Fprintf(&b, "%s at %d (seen %d) ", t.resource, v, t.seen.Load())
		}
	}
	return strings.TrimSpace(b.String())
}
