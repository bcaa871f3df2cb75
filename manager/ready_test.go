package manager

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"
)

// unsyncedRunnable is a controller that has not synced, waiting for what waiting says.
type unsyncedRunnable struct{ waiting string }

func (unsyncedRunnable) Name() string              { return "podset" }
func (unsyncedRunnable) Run(context.Context) error { return nil }
func (unsyncedRunnable) HasSynced() bool           { return false }
func (u unsyncedRunnable) waitingFor() string      { return u.waiting }
func (unsyncedRunnable) NeedLeaderElection() bool  { return true }

// Before the process was first ready, readiness waits for every live controller to sync.
// After, a controller starting again on warm caches (a leader-only one after the Lease was
// won back) does not take readiness away, and with it the webhooks; one waiting for something
// (its CRD deleted) still does. M1 in issue 46: a re-election dropped /readyz for a moment.
func TestReadinessAfterAControllerRestarts(t *testing.T) {
	m, err := New(Options{Client: fake.NewClientset()})
	require.NoError(t, err)
	defer m.Factory().Shutdown()
	m.running.Store(true)
	m.cachesSynced.Store(true)
	live := func(r Runnable) {
		m.mu.Lock()
		defer m.mu.Unlock()
		clear(m.live)
		m.live[&r] = context.Background()
	}

	live(unsyncedRunnable{})
	assert.EqualError(t, m.ready(), "controllers not synced: podset", "not ready before its first sync")

	m.mu.Lock()
	clear(m.live)
	m.mu.Unlock()
	require.NoError(t, m.ready(), "ready once nothing waits")

	live(unsyncedRunnable{})
	assert.NoError(t, m.ready(), "a restart on warm caches keeps readiness")
	live(unsyncedRunnable{waiting: "waiting for podsets.example.com/v1: CRD podsets.example.com was deleted"})
	assert.EqualError(t, m.ready(), "controllers not synced: podset (waiting for podsets.example.com/v1: CRD podsets.example.com was deleted)",
		"what it waits for still counts")
}
