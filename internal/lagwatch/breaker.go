package lagwatch

import (
	"context"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/informer"
)

// Source is one informer the watch judges: its name and a consistent read of its resource
// (informer.VersionOf).
type Source struct {
	Name string
	Take func(ctx context.Context) (*informer.Version, error)
}

// Report is what the watch tells its owner.
type Report struct {
	// Lags is called at each tick while informer name lags by lag beyond MaxLag; detail is
	// informer.Version.Lagging.
	Lags func(name string, lag time.Duration, detail string)
	// CaughtUp is called when informer name reached a read it was waited for (whether or not
	// it lagged beyond the bound meanwhile).
	CaughtUp func(name string)
}

// Watch judges a fixed set of sources against one bound. Tick is not safe for concurrent
// use: one goroutine owns a Watch.
type Watch struct {
	maxLag, period time.Duration
	clock          clock.Clock
	logger         klog.Logger
	report         Report
	srcs           []Source
	st             []state
}

// state is one source's read in flight: the oldest its cache has not reached.
type state struct {
	ver         *informer.Version
	taken       time.Time // on the watch's clock
	nextRead    time.Time
	nextConfirm time.Time
}

// New returns a watch of srcs with bound maxLag (positive).
func New(maxLag time.Duration, clk clock.Clock, logger klog.Logger, report Report, srcs []Source) *Watch {
	return &Watch{maxLag: maxLag, period: maxLag / 4, clock: clk, logger: logger, report: report,
		srcs: srcs, st: make([]state, len(srcs))}
}

// Interval is how often Tick should run: a quarter of the bound, at most a second.
func (w *Watch) Interval() time.Duration { return min(w.period, time.Second) }

// Run ticks until ctx ends.
func (w *Watch) Run(ctx context.Context, clk clock.WithTicker) {
	tick := clk.NewTicker(w.Interval())
	defer tick.Stop()
	for {
		w.Tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
	}
}

// Tick judges every source once: it takes a read of those with none in flight (every
// MaxLag/4), reports a source whose read is older than the bound and not reached (after a
// consistent read confirms it), and one whose read was reached.
func (w *Watch) Tick(ctx context.Context) {
	now := w.clock.Now()
	for i, src := range w.srcs {
		s := &w.st[i]
		if s.ver != nil && s.ver.Reached() {
			s.ver = nil
			w.report.CaughtUp(src.Name)
		}
		if s.ver == nil {
			if now.Before(s.nextRead) {
				continue
			}
			s.nextRead = now.Add(w.period)
			rctx, cancel := context.WithTimeout(ctx, min(w.period, 10*time.Second))
			ver, err := src.Take(rctx)
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					w.logger.V(2).Info("Could not read the API server's state of an informer's resource", "informer", src.Name, "err", err)
				}
				continue
			}
			s.ver, s.taken, s.nextConfirm = ver, now, now.Add(w.maxLag)
			continue
		}
		lag := now.Sub(s.taken)
		if lag <= w.maxLag {
			continue
		}
		if !now.Before(s.nextConfirm) {
			s.nextConfirm = now.Add(w.period)
			ok, err := s.ver.Confirm(klog.NewContext(ctx, w.logger))
			switch {
			case ok:
				s.ver = nil
				w.report.CaughtUp(src.Name)
				continue
			case err != nil:
				if ctx.Err() == nil {
					w.logger.V(2).Info("Could not compare a cache with the API server", "informer", src.Name, "err", err)
				}
			}
		}
		w.report.Lags(src.Name, lag, s.ver.Lagging())
	}
}
