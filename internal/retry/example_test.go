package retry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/internal/retry"
)

func ExampleUntil() {
	calls := 0
	v, err := retry.Until(context.Background(), clock.RealClock{}, func(context.Context) (string, error) {
		calls++
		if calls < 2 {
			return "", errors.New("the API server did not answer")
		}
		return "resourceVersion 42", nil
	}, func(err error, wait time.Duration) { fmt.Println(err, "- next try in", wait) })
	fmt.Println(v, err)
	// Output:
	// the API server did not answer - next try in 1s
	// resourceVersion 42 <nil>
}

// The waits double up to MaxWait; a context that ends stops the calls.
func TestUntilWaitsLongerEachTimeAndStopsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var waits []time.Duration
		start := time.Now()
		_, err := retry.Until(ctx, clock.RealClock{}, func(context.Context) (int, error) {
			if time.Since(start) > 2*time.Minute {
				cancel()
			}
			return 0, errors.New("down")
		}, func(_ error, wait time.Duration) { waits = append(waits, wait) })
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
		for i, w := range want {
			if i >= len(waits) || waits[i] != w {
				t.Fatalf("waits %v, want %v first", waits, want)
			}
		}
	})
}
