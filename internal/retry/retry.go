package retry

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// MaxWait is the longest Until waits between two calls.
const MaxWait = 30 * time.Second

// Until calls f until it returns no error, or ctx ends (then it returns ctx's error). After
// each failure it tells failed (which may be nil) the error and how long it waits before the
// next call: a second, then twice as long each time, at most MaxWait, timed by clk.
func Until[T any](ctx context.Context, clk clock.Clock, f func(context.Context) (T, error), failed func(err error, wait time.Duration)) (T, error) {
	wait := time.Second
	for {
		v, err := f(ctx)
		if err == nil {
			return v, nil
		}
		if ctx.Err() != nil {
			var zero T
			return zero, ctx.Err()
		}
		if failed != nil {
			failed(err, wait)
		}
		t := clk.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			var zero T
			return zero, ctx.Err()
		case <-t.C():
		}
		wait = min(2*wait, MaxWait)
	}
}
