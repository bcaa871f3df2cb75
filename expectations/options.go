package expectations

import (
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// DefaultTTL is how long a record is trusted before Satisfied gives up waiting on it. It is
// kube-controller-manager's ExpectationsTimeout: long enough to cover the watch latency of a
// large batch of creations, short enough that a lost watch event only delays a resync.
const DefaultTTL = 5 * time.Minute

// Option configures an Expectations or UIDTracking store at construction.
type Option func(*config)

type config struct {
	ttl    time.Duration
	clock  clock.PassiveClock
	logger klog.Logger
}

func newConfig(opts []Option) config {
	c := config{ttl: DefaultTTL, clock: clock.RealClock{}, logger: klog.Background()}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// WithTTL sets how old a record may get before Satisfied reports it satisfied anyway (the
// controller then resyncs from its cache instead of waiting forever for an event that was
// lost). A value <= 0 keeps DefaultTTL.
func WithTTL(ttl time.Duration) Option {
	return func(c *config) {
		if ttl > 0 {
			c.ttl = ttl
		}
	}
}

// WithClock injects the clock used to stamp records and to age them; a clock.Clock works as
// well. nil keeps the real clock. Tests pass a k8s.io/utils/clock/testing fake clock.
func WithClock(clk clock.PassiveClock) Option {
	return func(c *config) {
		if clk != nil {
			c.clock = clk
		}
	}
}

// WithLogger sets the logger for the V(4) trace of every set, observe, satisfied and expired
// transition. The default is klog.Background(). The verbosity check happens before any
// argument is built, so a disabled V(4) costs no allocation on the hot path.
func WithLogger(logger klog.Logger) Option {
	return func(c *config) {
		c.logger = logger
	}
}
