package informer

import (
	"testing"

	"k8s.io/client-go/tools/cache"
)

// storeBehind is an informer whose reflector has received a version its store has not applied
// yet: the events between them are queued.
type storeBehind struct {
	cache.SharedIndexInformer
	reflector string
	store     cache.Indexer
}

func (s storeBehind) LastSyncResourceVersion() string { return s.reflector }
func (s storeBehind) GetIndexer() cache.Indexer       { return s.store }

type indexerAt struct {
	cache.Indexer
	rv string
}

func (i indexerAt) LastStoreSyncResourceVersion() string { return i.rv }

// A cache has reached a version when its store applied it, not when its reflector received
// it: a lister reads the store, and a Reconcile started on the reflector's word could miss the
// write it waited for.
func TestAVersionIsReachedWhenTheStoreAppliedIt(t *testing.T) {
	inf := storeBehind{reflector: "9", store: indexerAt{rv: "5"}}
	if got := appliedVersion(inf); got != "5" {
		t.Errorf("applied = %q, want the store's 5", got)
	}
	p := &versionPart{inf: inf, rv: "7"}
	if p.reached() {
		t.Error("reached on the reflector's word while the store is at 5")
	}
	p.inf = storeBehind{reflector: "9", store: indexerAt{rv: "7"}}
	if !p.reached() {
		t.Error("not reached with the store at 7")
	}
	// Without client-go's AtomicFIFO the store records no version: the reflector's is used.
	p.inf = storeBehind{reflector: "9", store: indexerAt{}}
	if !p.reached() {
		t.Error("not reached on the reflector's 9 when the store records none")
	}
}
