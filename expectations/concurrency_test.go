package expectations_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/expectations"
)

// TestConcurrentWorkers runs 8 workers the way a controller does: each sets expectations for
// its own keys while informer goroutines observe the events for all keys. Run under -race,
// it also proves the locking; the final counts prove no observation was lost.
func TestConcurrentWorkers(t *testing.T) {
	const workers, keysPerWorker, perKey = 8, 50, 20
	e := expectations.New[string]()
	key := func(w, i int) string { return fmt.Sprintf("ns/w%d-%d", w, i) }

	// Phase 1: workers set their expectations concurrently.
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range keysPerWorker {
				e.ExpectCreations(key(w, i), perKey)
				if e.Satisfied(key(w, i)) {
					t.Errorf("%s satisfied before any observation", key(w, i))
				}
			}
		})
	}
	wg.Wait()

	// Phase 2: "informers" observe every key from several goroutines while workers poll.
	const observers = 4
	for range observers {
		wg.Go(func() {
			for w := range workers {
				for i := range keysPerWorker {
					for range perKey / observers {
						e.CreationObserved(key(w, i))
					}
				}
			}
		})
	}
	for w := range workers {
		wg.Go(func() {
			for i := range keysPerWorker {
				e.Satisfied(key(w, i))
				e.Get(key(w, i))
			}
		})
	}
	wg.Wait()

	for w := range workers {
		for i := range keysPerWorker {
			add, del, ok := e.Get(key(w, i))
			assert.Equal(t, []any{int64(0), int64(0), true}, []any{add, del, ok}, key(w, i))
			assert.True(t, e.Satisfied(key(w, i)))
		}
	}
	assert.Equal(t, workers*keysPerWorker, e.Len())

	// Phase 3: concurrent deletes of every key leave an empty store.
	for w := range workers {
		wg.Go(func() {
			for i := range keysPerWorker {
				e.DeleteExpectations(key(w, i))
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 0, e.Len())
}

// TestConcurrentUIDDoubleObservation: four goroutines each observe the deletion of all the
// expected UIDs (as event, update, tombstone and relist would). Each UID counts once, so the
// count ends at exactly zero, not below.
func TestConcurrentUIDDoubleObservation(t *testing.T) {
	const nUIDs, observers = 200, 4
	u := expectations.NewUIDTracking[string]()
	uids := make([]types.UID, nUIDs)
	for i := range uids {
		uids[i] = types.UID(fmt.Sprintf("uid-%d", i))
	}
	u.ExpectDeletions("ns/rs", uids)
	u.ExpectDeletions("ns/other", uids[:10])

	var wg sync.WaitGroup
	for o := range observers {
		wg.Go(func() {
			for i := range uids {
				// Different orders per goroutine, so the same UID races with itself.
				u.DeletionObserved("ns/rs", uids[(i*(o+1))%nUIDs])
				u.DeletionObserved("ns/rs", uids[i])
			}
		})
	}
	wg.Go(func() {
		for range nUIDs {
			u.Satisfied("ns/rs")
			u.GetUIDs("ns/rs")
			u.CreationObserved("ns/rs")
		}
	})
	wg.Wait()

	add, del, ok := u.Get("ns/rs")
	assert.True(t, ok)
	assert.Equal(t, int64(0), del, "each UID counted once")
	assert.Equal(t, int64(-nUIDs), add, "creations were counted independently")
	assert.Empty(t, u.GetUIDs("ns/rs"))
	_, otherDel, _ := u.Get("ns/other")
	assert.Equal(t, int64(10), otherDel, "another key is untouched")
}
