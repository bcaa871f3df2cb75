package lagwatch_test

import (
	"context"
	"fmt"
	"time"

	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/lagwatch"
)

// A watch over a source whose reads fail reports nothing: it cannot judge, and tries again
// every quarter of the bound.
func ExampleWatch() {
	clk := clocktesting.NewFakeClock(time.Now())
	reads := 0
	src := lagwatch.Source{Name: "configmaps", Take: func(context.Context) (*informer.Version, error) {
		reads++
		return nil, fmt.Errorf("unreachable")
	}}
	w := lagwatch.New(time.Minute, clk, klog.Background(), lagwatch.Report{
		Lags:     func(name string, lag time.Duration, _ string) { fmt.Println("lags:", name, lag) },
		CaughtUp: func(name string) { fmt.Println("caught up:", name) },
	}, []lagwatch.Source{src})
	for range 4 {
		w.Tick(context.Background())
		clk.Step(w.Interval())
	}
	fmt.Println("tick every", w.Interval(), "reads", reads)
	// Output: tick every 1s reads 1
}
