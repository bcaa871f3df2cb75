// Package netfault holds what the fake networks of the leaderelection and sharding split-brain
// tests share: injected latency, and a reply that is delayed or lost after the server applied
// the request. Only tests import it; each test keeps its own fault model (partitions, failures,
// the seed) and draws its delays and losses itself.
package netfault

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Sleep is injected latency, not a wait for a condition: it waits d unless ctx ends first,
// and then returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Reply sends a request that reached the server (do) and brings its reply back as a network
// would: the reply takes replyDelay() (drawn once do has returned; a ctx that ends meanwhile
// fails the call, though the server applied it, as with a client timing out), and a
// successful reply that is lost reaches the client as a timeout. lost reports that the reply
// was lost.
func Reply[T any](ctx context.Context, replyDelay func() time.Duration, lose bool, do func() (T, error)) (v T, lost bool, err error) {
	var zero T
	v, err = do()
	if serr := Sleep(ctx, replyDelay()); serr != nil {
		return zero, false, serr
	}
	if err == nil && lose {
		return zero, true, apierrors.NewTimeoutError("injected lost reply", 0)
	}
	return v, false, err
}
