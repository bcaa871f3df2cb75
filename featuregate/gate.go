package featuregate

import (
	"sync"
	"sync/atomic"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/klog/v2"
)

// Gate is a mutable, versioned feature registry. Register features with Add or
// AddVersioned, configure them with Set/SetFromMap (or the --feature-gates flag) and
// SetEmulationVersion, then Freeze it; read it with Enabled from any goroutine.
//
// Reads never lock: every mutation publishes a new immutable snapshot through an atomic
// pointer, so Enabled is a pointer load plus one map lookup (see docs/performance.md).
// Mutations are serialised by a mutex and are all-or-nothing: a call that returns an error
// leaves the gate exactly as it was.
//
// The zero Gate is ready to use (no features but AllAlpha/AllBeta, no emulation version,
// klog.Background() as logger); New is the usual constructor.
type Gate struct {
	// mu serialises mutations; readers use snap only.
	mu sync.Mutex
	// snap is the published state; nil only in a zero Gate never touched by a mutation.
	snap atomic.Pointer[snapshot]
	// read is set by the first Enabled; after it, registration is refused. (Written under
	// mu; atomic so the warning in SetEmulationVersion can check it after unlocking.)
	read atomic.Bool
	// reported remembers unregistered features already reported, so a hot loop asking
	// for a typo reports once, not once per call.
	reported sync.Map // Feature -> struct{}

	// Guarded by mu.
	frozen         bool
	flagRegistered bool

	// Set by New, immutable after.
	logger    klog.Logger
	hasLogger bool
}

var (
	_ Gates = (*Gate)(nil)
)

// Option configures New.
type Option func(*Gate)

// WithEmulationVersion makes the gate behave as at version v, with a min compatibility
// version one minor before it (see SetEmulationVersion). The default (nil) is no
// emulation: each feature's newest spec is in force.
func WithEmulationVersion(v *version.Version) Option {
	return func(g *Gate) {
		s := g.current()
		s.emulation, s.minCompat = v, defaultMinCompat(v)
		g.snap.Store(s.rebuild())
	}
}

// WithLogger sets the logger for warnings (setting GA or deprecated features) and for the
// report of unregistered features. The default is klog.Background().
func WithLogger(logger klog.Logger) Option {
	return func(g *Gate) {
		g.logger = logger
		g.hasLogger = true
	}
}

// New returns a gate that knows only the AllAlpha and AllBeta pseudo gates.
func New(opts ...Option) *Gate {
	g := &Gate{}
	g.snap.Store(initialSnapshot())
	for _, opt := range opts {
		opt(g)
	}
	return g
}

func (g *Gate) log() klog.Logger {
	if g.hasLogger {
		return g.logger
	}
	return klog.Background()
}

// load returns the published snapshot, publishing the initial one for a zero Gate.
func (g *Gate) load() *snapshot {
	if s := g.snap.Load(); s != nil {
		return s
	}
	g.snap.CompareAndSwap(nil, initialSnapshot())
	return g.snap.Load()
}

// current returns a shallow copy of the published snapshot for a mutation to edit (maps
// still shared: replace them, never write into them). Callers hold g.mu.
func (g *Gate) current() *snapshot {
	c := *g.load()
	return &c
}

// Enabled reports whether feature f is on at the emulated version.
//
// It takes no lock and does not allocate. The first call marks the gate as read: from then
// on Add and AddVersioned fail with ErrClosed (ReasonAlreadyRead), so late registration cannot change
// behaviour that already ran.
//
// An unregistered feature (usually a typo or a missing Add) reads as false: a controller
// behind it stays off rather than crashing the process as upstream's panic would. It is
// reported once per gate and feature through utilruntime.HandleErrorWithLogger with the
// gate's logger (an *Error of ReasonUnknownFeature, key "featureGate").
func (g *Gate) Enabled(f Feature) bool {
	// The fast path: one atomic load, one flag test, one map lookup.
	if s := g.snap.Load(); s != nil && s.read {
		if v, ok := s.enabled[f]; ok {
			return v
		}
	}
	return g.enabledSlow(f)
}

// enabledSlow handles the first read, the zero Gate and unregistered features, off the hot
// path.
func (g *Gate) enabledSlow(f Feature) bool {
	s := g.load()
	if !s.read {
		s = g.markRead()
	}
	if v, ok := s.enabled[f]; ok {
		return v
	}
	if _, loaded := g.reported.LoadOrStore(f, struct{}{}); !loaded {
		utilruntime.HandleErrorWithLogger(g.log(), unknownFeature(f),
			"Feature gate is not registered; it reads as disabled", "featureGate", f)
	}
	return false
}

// markRead closes registration and republishes the snapshot flagged as read, so later
// reads take the fast path. Mutations copy the flag along.
func (g *Gate) markRead() *snapshot {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.read.Store(true)
	cur := g.current()
	if !cur.read {
		cur.read = true
		g.snap.Store(cur)
	}
	return cur
}

// EmulationVersion returns the emulated version, nil when the gate does not emulate one.
func (g *Gate) EmulationVersion() *version.Version {
	return g.load().emulation
}

// String renders the explicitly set values, sorted, in the form Set accepts:
// "A=true,AllBeta=false". Feeding it to Set on a gate with the same features reproduces
// this gate's state. (Test overrides are not part of it.)
func (g *Gate) String() string {
	if g == nil {
		return ""
	}
	return g.load().String()
}

// DeepCopy returns an independent gate with the same features, values, test overrides,
// emulation version and logger, so changes can be tried on the copy (e.g. to validate a
// configuration) without touching g. The copy starts unread, unfrozen and without a
// registered flag, so it can still be configured.
func (g *Gate) DeepCopy() *Gate {
	c := &Gate{logger: g.logger, hasLogger: g.hasLogger}
	// Snapshots are immutable, so sharing their maps is a deep copy in effect.
	s := *g.load()
	s.read = false
	c.snap.Store(&s)
	return c
}
