package lagwatch

import (
	"context"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/retry"
)

// GateReport is what Gate tells its caller while it waits.
type GateReport struct {
	// Unreadable is called when a source's read failed; Gate tries again after wait.
	Unreadable func(name string, err error, wait time.Duration)
	// Waiting is called when Gate waits for a source's cache to reach its read; lagging is
	// informer.Version.Lagging.
	Waiting func(name, lagging string)
}

// Gate is Freshness.Gate: it takes a consistent read of every source's resource (each tried
// again, a second to 30 s apart, while the API server does not answer), then returns once every
// source's cache has reached its read, or with ctx's error. The reads are all taken before any
// is waited for, so that each is no older than the moment Gate was called.
func Gate(ctx context.Context, clk clock.Clock, logger klog.Logger, srcs []Source, report GateReport) error {
	start := clk.Now()
	versions := make([]*informer.Version, 0, len(srcs))
	for _, src := range srcs {
		ver, err := retry.Until(ctx, clk, src.Take, func(err error, wait time.Duration) {
			report.Unreadable(src.Name, err, wait)
		})
		if err != nil {
			return err
		}
		versions = append(versions, ver)
	}
	for i, ver := range versions {
		if ver.Reached() {
			continue
		}
		report.Waiting(srcs[i].Name, ver.Lagging())
		if err := ver.Wait(klog.NewContext(ctx, logger)); err != nil {
			return err
		}
	}
	logger.V(2).Info("The caches reached the API server's state", "informers", len(versions), "waited", clk.Since(start))
	return nil
}
