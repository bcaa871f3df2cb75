package podset

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
)

// FinalizerRecord is the finalizer the controller puts on every PodSet when it keeps records
// outside the cluster (Options.Records): the PodSet is not deleted until its record is gone.
const FinalizerRecord = "podset.examples.ctrlkit.dev/external-record"

// Records is the system outside the cluster where the controller keeps a record of every
// PodSet: a DNS name, a load balancer pool, an inventory entry. The garbage collector cannot
// reach it, which is what a finalizer is for. Both methods are idempotent: a finalize function
// runs again after a crash or a Conflict between the cleanup and the finalizer's removal.
type Records interface {
	// Put records (or refreshes) the PodSet.
	Put(ctx context.Context, ps *v1alpha1.PodSet) error
	// Remove forgets the PodSet with this UID; forgetting one that is not there is no error.
	Remove(ctx context.Context, ps *v1alpha1.PodSet) error
}

// MemoryRecords is an in-memory Records, the "external system" of the demo and the tests. It
// counts removals and can be made to fail them, to show a finalizer holding a deletion back.
type MemoryRecords struct {
	mu       sync.Mutex
	records  map[types.UID]string
	removals map[types.UID]int // Remove calls per UID, failed ones included
	failWith error
}

// NewMemoryRecords returns an empty MemoryRecords.
func NewMemoryRecords() *MemoryRecords {
	return &MemoryRecords{records: map[types.UID]string{}, removals: map[types.UID]int{}}
}

// Put records ps under its UID.
func (m *MemoryRecords) Put(_ context.Context, ps *v1alpha1.PodSet) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.records[ps.UID] = ps.Namespace + "/" + ps.Name
	return nil
}

// Remove forgets ps, or fails with the error set by FailRemovals.
func (m *MemoryRecords) Remove(_ context.Context, ps *v1alpha1.PodSet) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.removals[ps.UID]++
	if m.failWith != nil {
		return fmt.Errorf("removing the record of %s/%s: %w", ps.Namespace, ps.Name, m.failWith)
	}
	delete(m.records, ps.UID)
	return nil
}

// FailRemovals makes every later Remove fail with err; nil lets them succeed again.
func (m *MemoryRecords) FailRemovals(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failWith = err
}

// Has reports whether a record of the PodSet with this UID exists.
func (m *MemoryRecords) Has(uid types.UID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.records[uid]
	return ok
}

// Removals is how many times Remove was called for the PodSet with this UID.
func (m *MemoryRecords) Removals(uid types.UID) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.removals[uid]
}

// Len is how many records exist.
func (m *MemoryRecords) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.records)
}
