package sharding

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// The sharder does not cache the children of the sharded resource: they are
// the bulk of a ring's objects (a ReplicaSet's Pods), and a cache of them
// would make the sharder's member the one member whose cache does not
// shrink as members join. It caches only the children without the ring's
// label (normally none: a member's controller labels what it creates), and
// reads the labelled children of an owner from the API server when the
// owner changes hands.

// childLists reads owners' labelled children from the API server, one paged
// metadata LIST per child resource and namespace. A LIST is shared by the
// handovers that began before it started: the API server's LIST is a
// consistent read, so it holds every child written before any of them
// observed its owner's previous member stop (a drain acknowledgement, a
// Lease found dead). Lists are dropped after maxAge.
type childLists struct {
	ring  string
	list  func(ctx context.Context, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error)
	slim  func(*metav1.PartialObjectMetadata) (*metav1.PartialObjectMetadata, error)
	clock clock.PassiveClock
	// pageSize bounds a LIST page (ListOptions.Limit).
	pageSize int64

	seq atomic.Uint64 // orders observations and LIST starts

	mu    sync.Mutex
	lists map[listKey]*nsList
}

type listKey struct {
	gvr schema.GroupVersionResource
	ns  string
}

// nsList is the latest LIST of one child resource in one namespace.
type nsList struct {
	mu      sync.Mutex // held while listing, so handovers waiting for it share it
	start   uint64     // childLists.seq when the LIST began; 0: none yet
	at      time.Time  // when it ended
	byOwner map[types.UID][]*metav1.PartialObjectMetadata
}

func newChildLists(ring string, clk clock.PassiveClock,
	list func(ctx context.Context, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error)) *childLists {
	slim := slimMetadata(ring)
	return &childLists{
		ring: ring, list: list, slim: slim, clock: clk, pageSize: 500,
		lists: map[listKey]*nsList{},
	}
}

// observe returns a mark to take before reading an owner's state from the
// cache: a LIST started after the mark holds every child written before
// that state.
func (l *childLists) observe() uint64 { return l.seq.Add(1) }

// children returns owner's labelled children of the resources gvrs, from a
// LIST started after mark.
func (l *childLists) children(ctx context.Context, gvrs []schema.GroupVersionResource, owner *metav1.PartialObjectMetadata, mark uint64) ([]child, error) {
	var out []child
	for _, gvr := range gvrs {
		objs, err := l.of(ctx, listKey{gvr: gvr, ns: owner.Namespace}, owner.UID, mark)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			out = append(out, child{gvr: gvr, obj: o})
		}
	}
	return out, nil
}

func (l *childLists) of(ctx context.Context, k listKey, uid types.UID, mark uint64) ([]*metav1.PartialObjectMetadata, error) {
	l.mu.Lock()
	nl := l.lists[k]
	if nl == nil {
		nl = &nsList{}
		l.lists[k] = nl
	}
	l.mu.Unlock()

	nl.mu.Lock()
	defer nl.mu.Unlock()
	if nl.start <= mark {
		start, byOwner, err := l.listAll(ctx, k)
		if err != nil {
			return nil, err
		}
		nl.start, nl.byOwner, nl.at = start, byOwner, l.clock.Now()
	}
	return nl.byOwner[uid], nil
}

// listAll lists k's labelled children, page by page (one snapshot: the
// pages after the first continue from its resourceVersion), grouped by
// controller, and returns the mark taken before it began.
func (l *childLists) listAll(ctx context.Context, k listKey) (uint64, map[types.UID][]*metav1.PartialObjectMetadata, error) {
	start := l.seq.Add(1)
	byOwner := map[types.UID][]*metav1.PartialObjectMetadata{}
	// Every labelled child, whatever its member: a handover whose owner
	// write failed may have left children labelled for a member that is
	// neither the owner's previous nor its next.
	opts := metav1.ListOptions{LabelSelector: Label(l.ring), Limit: l.pageSize}
	for {
		page, err := l.list(ctx, k.gvr, k.ns, opts)
		if err != nil {
			return 0, nil, fmt.Errorf("listing %s in %s: %w", k.gvr.GroupResource(), k.ns, err)
		}
		for i := range page.Items {
			o := &page.Items[i]
			ref := metav1.GetControllerOfNoCopy(o)
			if ref == nil {
				continue
			}
			s, err := l.slim(o)
			if err != nil {
				return 0, nil, err
			}
			byOwner[ref.UID] = append(byOwner[ref.UID], s)
		}
		if page.Continue == "" {
			break
		}
		opts.Continue = page.Continue
	}
	return start, byOwner, nil
}

// drop forgets the list of gvr in ns: a write made it stale.
func (l *childLists) drop(gvr schema.GroupVersionResource, ns string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.lists, listKey{gvr: gvr, ns: ns})
}

// prune drops the lists that ended more than maxAge ago and are not being
// read.
func (l *childLists) prune(maxAge time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, nl := range l.lists {
		if !nl.mu.TryLock() {
			continue
		}
		if l.clock.Since(nl.at) > maxAge {
			delete(l.lists, k)
		}
		nl.mu.Unlock()
	}
}

// len reports how many lists are kept (tests).
func (l *childLists) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lists)
}
