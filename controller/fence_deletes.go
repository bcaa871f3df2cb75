package controller

import (
	"context"
	"time"

	"github.com/ctrlkit/ctrlkit/internal/fencehook"
	"github.com/ctrlkit/ctrlkit/internal/versions"
)

// A write and a delete of the same object race: the Reconcile updates an object, someone (or the
// garbage collector) deletes it, and the informer's delete event can reach the fence table
// before the client has returned the write's answer and recorded its fence. The cache then no
// longer has the object, which by itself cannot be told from an object the informer has not
// seen created yet (the fence must wait for that one), and no later event comes: the key would
// wait for the fence's TTL. So while Reconciles run, the table remembers the deletes its
// informers show, with the version they were deleted at, and a version fence recorded after a
// delete at or past its write is not recorded at all.
//
// Only a Reconcile running when the delete event arrives can record a fence the delete
// satisfies: a write made later is newer than the delete. So nothing is remembered while no
// Reconcile runs, the memory is dropped whenever the last one returns, and entries older than
// the TTL are pruned by the sweep (a busy controller may always have one running).

// deletion is a delete an informer showed: the version the object was deleted at ("" when the
// informer inferred the delete on a relist and does not know it).
type deletion struct {
	rv string
	at time.Time
}

// recorder returns ctx carrying the fence recorder of one Reconcile of key, and the function
// to call once that Reconcile has returned.
func (ft *fenceTable[K]) recorder(ctx context.Context, key K) (context.Context, func()) {
	ft.reconciling.Add(1)
	return fencehook.With(ctx, &keyFencer[K]{ft: ft, key: key}), ft.reconciled
}

// reconciled is the end of a Reconcile begun with recorder: the last one to return drops the
// remembered deletes.
func (ft *fenceTable[K]) reconciled() {
	if ft.reconciling.Add(-1) > 0 || ft.remembered.Load() == 0 {
		return
	}
	ft.mu.Lock()
	defer ft.mu.Unlock()
	// Checked again under the lock: a Reconcile that started meanwhile may need what a delete
	// event recorded since.
	if ft.reconciling.Load() == 0 {
		ft.deletes = nil
		ft.remembered.Store(0)
	}
}

// rememberLocked records that the informer of ref showed it deleted at rv.
func (ft *fenceTable[K]) rememberLocked(ref objRef, rv string) {
	if ft.deletes == nil {
		ft.deletes = make(map[objRef]deletion)
	}
	ft.deletes[ref] = deletion{rv: rv, at: ft.clock.Now()}
	ft.remembered.Store(int64(len(ft.deletes)))
}

// deletedSinceLocked reports whether the informer showed ref deleted at rv or later. A delete
// at an unknown version (inferred on a relist) says nothing: the write may be a re-create
// after it, whose fence must hold until the informer shows the new object; such a fence that
// no event releases waits out the TTL instead.
func (ft *fenceTable[K]) deletedSinceLocked(ref objRef, rv string) bool {
	d, ok := ft.deletes[ref]
	return ok && d.rv != "" && versions.AtLeast(d.rv, rv)
}

// forgetDeletes prunes the deletes remembered for longer than the TTL.
func (ft *fenceTable[K]) forgetDeletes(now time.Time) {
	if ft.remembered.Load() == 0 {
		return
	}
	ft.mu.Lock()
	defer ft.mu.Unlock()
	for ref, d := range ft.deletes {
		if !d.at.Add(ft.ttl).After(now) {
			delete(ft.deletes, ref)
		}
	}
	ft.remembered.Store(int64(len(ft.deletes)))
}
