package informer

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
)

// pollInterval is how often WaitForCacheSync re-checks values that offer only
// HasSynced (client-go's cache.WaitForCacheSync uses the same period).
const pollInterval = 100 * time.Millisecond

// CacheSyncError is returned by WaitForCacheSync when ctx ended first. It
// matches ErrCacheSyncTimeout and, through Unwrap, the context's cause
// (context.DeadlineExceeded, context.Canceled or a custom cause).
type CacheSyncError struct {
	// Unsynced names every informer that had not synced, in argument order.
	Unsynced []string
	// Cause is context.Cause of the context that ended the wait.
	Cause error
}

func (e *CacheSyncError) Error() string {
	return fmt.Sprintf("caches not synced: %s: %v", strings.Join(e.Unsynced, ", "), e.Cause)
}

// Is makes errors.Is(err, ErrCacheSyncTimeout) true.
func (e *CacheSyncError) Is(target error) bool { return target == ErrCacheSyncTimeout }

// Unwrap returns the context's cause.
func (e *CacheSyncError) Unwrap() error { return e.Cause }

// WaitForCacheSync waits until every inf has synced, or ctx ends. It returns
// nil when all synced, else a *CacheSyncError naming each one that had not
// (by Name() or String() when it has one, else by its Go type). An informer
// following a NamespaceSet or ShardSet counts once it was seen synced, even
// if a change of its set has since added a namespace or shard it is still
// listing.
//
// Informers of this package, and anything else with a
// HasSyncedChecker() cache.DoneChecker method, are waited for without
// polling; other values are polled every 100ms.
func WaitForCacheSync(ctx context.Context, infs ...interface{ HasSynced() bool }) error {
	for i, inf := range infs {
		if inf == nil {
			return fmt.Errorf("wait for cache sync: informer argument %d is nil", i)
		}
	}
	var polled []interface{ HasSynced() bool }
	// An informer following a NamespaceSet or ShardSet can lose its sync
	// after it was seen synced (the set changed): what is waited for is a
	// sync, not one that lasts until every other informer's.
	seen := make([]bool, len(infs))
	for i, inf := range infs {
		if c, ok := inf.(interface{ HasSyncedChecker() cache.DoneChecker }); ok {
			seen[i] = waitChecker(ctx, inf, c)
			continue
		}
		polled = append(polled, inf)
	}
	if len(polled) > 0 {
		// The error only says ctx ended; the per-informer check below
		// decides what to report.
		_ = wait.PollUntilContextCancel(ctx, pollInterval, true, func(context.Context) (bool, error) {
			for _, inf := range polled {
				if !inf.HasSynced() {
					return false, nil
				}
			}
			return true, nil
		})
	}

	var unsynced []string
	for i, inf := range infs {
		if !seen[i] && !inf.HasSynced() {
			unsynced = append(unsynced, displayName(inf))
		}
	}
	if len(unsynced) == 0 {
		return nil
	}
	cause := context.Cause(ctx)
	if cause == nil {
		// Only reachable with a value whose HasSyncedChecker closed before
		// its HasSynced turned true; client-go's informers never do that.
		cause = context.DeadlineExceeded
	}
	return &CacheSyncError{Unsynced: unsynced, Cause: cause}
}

// waitChecker waits until c's channel closes with inf synced, or ctx ends.
// An informer following a NamespaceSet or ShardSet can lose its sync (a
// namespace or shard was added): its checker then hands out a fresh channel,
// which is waited for in turn. Its sync can also be lost and regained, and
// lost again, between two reads (two quick changes of the set): a channel
// closed while HasSynced is false and not replaced is looked at again after
// pollInterval, until ctx ends. It reports whether inf was seen synced.
func waitChecker(ctx context.Context, inf interface{ HasSynced() bool }, c interface{ HasSyncedChecker() cache.DoneChecker }) bool {
	for {
		ch := c.HasSyncedChecker().Done()
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
		if inf.HasSynced() {
			return true
		}
		if c.HasSyncedChecker().Done() == ch {
			t := time.NewTimer(pollInterval)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return false
			}
		}
	}
}

func displayName(v any) string {
	switch n := v.(type) {
	case interface{ Name() string }:
		return n.Name()
	case fmt.Stringer:
		return n.String()
	}
	return fmt.Sprintf("%T", v)
}
