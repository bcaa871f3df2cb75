package replicas

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/klog/v2"
)

// SlowStartInitialBatchSize is the first batch of SlowStartBatch in kube-controller-manager
// (controller.SlowStartInitialBatchSize): one call, then 2, 4, 8, ... With 1, a request every
// call of which fails (quota, an admission webhook) costs one failed call per sync.
const SlowStartInitialBatchSize = 1

// ErrNoFunc is returned by SlowStartBatch and InParallel when fn is nil.
var ErrNoFunc = errors.New("replicas: no function to call")

// BatchError is the error of SlowStartBatch and InParallel when calls failed: the failures of
// the batch that stopped SlowStartBatch, or of every call of InParallel. errors.Is and
// errors.As look into each failure.
type BatchError struct {
	// Calls is how many calls the batch made (failed or not).
	Calls int
	// Errs are the failures, in the order of the calls' indexes (never empty).
	Errs []error
}

// Error is the first failure's message, prefixed with how many calls failed when more than one
// did. Repeating every message would make a status condition of hundreds of copies of one
// quota error; kube-controller-manager reports only one for the same reason.
func (e *BatchError) Error() string {
	switch len(e.Errs) {
	case 0:
		return fmt.Sprintf("0 of %d calls failed", e.Calls)
	case 1:
		return e.Errs[0].Error()
	default:
		return fmt.Sprintf("%d of %d calls failed, the first: %v", len(e.Errs), e.Calls, e.Errs[0])
	}
}

// Unwrap returns every failure, for errors.Is and errors.As.
func (e *BatchError) Unwrap() []error { return e.Errs }

// SlowStartBatch calls fn count times: first initialBatchSize calls in parallel, then twice as
// many, and so on (the last batch is what is left), each batch starting once the previous one
// has returned. It stops after the first batch in which a call failed, and before a batch when
// ctx is done. It returns how many calls succeeded and, when it stopped early, why: a
// *BatchError with the failed batch's errors, or ctx's error.
//
// It mirrors kube-controller-manager's slowStartBatch (pkg/controller/replicaset), which the
// ReplicaSet and ReplicationController controllers use for creates (the Job and DaemonSet
// controllers batch theirs the same way): when every create
// is going to fail the same way, it costs min(count, initialBatchSize) failed requests and
// events per sync instead of count; when they succeed, count calls take about log2(count)
// round trips. Differences: ctrlkit reports every failure of the batch (upstream returns one),
// checks ctx between batches, and reads initialBatchSize <= 0 as SlowStartInitialBatchSize
// (upstream would make no call at all). When the calls take more than one batch, each batch
// is logged at V(4) through ctx's logger.
//
// The count-successes calls that did not succeed either failed or were never made. Neither
// will produce a watch event, so a controller that raised expectations for count creates
// lowers them by count-successes afterwards (and retries the remainder in its next sync).
// A call that fails for a reason that is nobody's error (a create in a namespace being
// deleted) can lower its own expectation and return nil, so that it neither stops the batches
// nor is lowered twice.
//
// count <= 0 makes no call and returns 0, nil. fn must be safe for concurrent use; a nil fn
// makes no call and returns ErrNoFunc.
func SlowStartBatch(ctx context.Context, count, initialBatchSize int, fn func() error) (successes int, err error) {
	if fn == nil {
		return 0, fmt.Errorf("%w: SlowStartBatch of %d calls", ErrNoFunc, count)
	}
	if initialBatchSize <= 0 {
		initialBatchSize = SlowStartInitialBatchSize
	}
	logger := klog.FromContext(ctx)
	sent := 0
	for size := min(count, initialBatchSize); size > 0; size = min(2*size, count-sent) {
		if err := ctx.Err(); err != nil {
			return successes, fmt.Errorf("slow start stopped after %d of %d calls: %w", sent, count, err)
		}
		if size < count {
			logger.V(4).Info("Slow-start batch", "size", size, "sent", sent, "count", count)
		}
		failed := runBatch(size, 0, func(int) error { return fn() })
		sent += size
		successes += size - len(failed)
		if len(failed) > 0 {
			return successes, &BatchError{Calls: size, Errs: failed}
		}
	}
	return successes, nil
}

// InParallel calls fn once for every item, all at the same time or at most limit at a time
// when limit > 0, waits for every call to return, and returns a *BatchError holding the
// failures (nil when none failed).
//
// It is how kube-controller-manager's ReplicaSet controller sends its deletes: all in parallel
// (their number capped by --burst-replicas), with no slow start, each failure lowering the
// expectation of the delete it was for. Unlike creates, deletes name existing Pods, so they do
// not all fail the same way for the same reason, and a scale-down should not take log2(n)
// round trips.
//
// fn runs for every item even when ctx (which InParallel does not take) is cancelled: the
// calls it makes then fail at once, and the per-item bookkeeping in fn (lowering an
// expectation) happens for every item. fn must be safe for concurrent use; a nil fn makes no
// call and returns ErrNoFunc.
func InParallel[T any](items []T, limit int, fn func(T) error) error {
	if fn == nil {
		return fmt.Errorf("%w: InParallel over %d items", ErrNoFunc, len(items))
	}
	if failed := runBatch(len(items), limit, func(i int) error { return fn(items[i]) }); len(failed) > 0 {
		return &BatchError{Calls: len(items), Errs: failed}
	}
	return nil
}

// runBatch calls fn(0..n-1) on n goroutines (limit > 0: at most limit at once), waits for all
// of them and returns their errors in index order.
func runBatch(n, limit int, fn func(i int) error) []error {
	errs := make([]error, n)
	var sem chan struct{}
	if limit > 0 && limit < n {
		sem = make(chan struct{}, limit)
	}
	var wg sync.WaitGroup
	for i := range n {
		if sem != nil {
			sem <- struct{}{}
		}
		wg.Go(func() {
			if sem != nil {
				defer func() { <-sem }()
			}
			errs[i] = fn(i)
		})
	}
	wg.Wait()
	var failed []error
	for _, err := range errs {
		if err != nil {
			failed = append(failed, err)
		}
	}
	return failed
}
