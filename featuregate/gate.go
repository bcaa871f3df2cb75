package featuregate

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
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

// snapshot is one immutable state of the gate. Its maps are never written after it is
// published; mutations copy them.
type snapshot struct {
	// enabled holds the resolved value of every known feature, pseudo gates included.
	enabled map[Feature]bool
	// known is every registered feature's validated history.
	known map[Feature]VersionedSpecs
	// explicit holds what Set/SetFromMap stored (AllAlpha/AllBeta included).
	explicit map[Feature]bool
	// overrides are test overrides (featuregatetesting); they win over explicit.
	overrides map[Feature]bool
	// emulation is the emulated version; nil means the newest spec of each feature.
	emulation *version.Version
	// minCompat is the min compatibility version; nil means one minor before emulation
	// (no bound without emulation).
	minCompat *version.Version
	// deps maps a feature to the features it depends on (sorted, no duplicates).
	deps map[Feature][]Feature
	// read is set once the gate answered Enabled (Gate.read says the same); until then
	// Enabled takes the slow path, which records the read.
	read bool
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

func initialSnapshot() *snapshot {
	known := make(map[Feature]VersionedSpecs, len(pseudoSpecs))
	for f, s := range pseudoSpecs {
		known[f] = VersionedSpecs{s}
	}
	s := &snapshot{known: known, explicit: map[Feature]bool{}, overrides: map[Feature]bool{}}
	return s.rebuild()
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
// on Add and AddVersioned fail with ErrAlreadyRead, so late registration cannot change
// behaviour that already ran.
//
// An unregistered feature (usually a typo or a missing Add) reads as false: a controller
// behind it stays off rather than crashing the process as upstream's panic would. It is
// reported once per gate and feature through utilruntime.HandleErrorWithLogger with the
// gate's logger (an *UnknownFeatureError, key "featureGate").
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
		utilruntime.HandleErrorWithLogger(g.log(), &UnknownFeatureError{Feature: f},
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

// Add registers unversioned features: each spec applies from version 0.0 on (or from its
// Version, when set). Re-adding a feature with the same spec is a no-op; with a different
// one it is an ErrConflictingSpec. All or nothing: on error no feature is added.
func (g *Gate) Add(features map[Feature]FeatureSpec) error {
	vs := make(map[Feature]VersionedSpecs, len(features))
	for f, s := range features {
		if s.Version == nil {
			s.Version = versionZero
		}
		vs[f] = VersionedSpecs{s}
	}
	return g.AddVersioned(vs)
}

// AddVersioned registers features with their histories (oldest first). A history must be
// consistent: every entry has a major.minor Version, versions strictly increase, each entry
// changes the stage, default or lock, stability never regresses (alpha < beta < GA;
// deprecated is terminal), a locked feature never unlocks; else ErrInvalidSpec. Re-adding
// an identical history is a no-op, a different one ErrConflictingSpec.
//
// Registration closes when the gate is first read (ErrAlreadyRead), when its flag is
// registered (ErrFlagRegistered; the help text was captured) or when it is frozen
// (ErrFrozen). All or nothing: on error no feature is added.
func (g *Gate) AddVersioned(features map[Feature]VersionedSpecs) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	names := slices.Sorted(maps.Keys(features))
	if err := g.registrationClosed("cannot add a feature gate after adding it to the flag set"); err != nil {
		if errors.Is(err, ErrFlagRegistered) {
			return err // upstream's own text
		}
		return fmt.Errorf("cannot add feature gates %v: %w", names, err)
	}
	cur := g.current()
	known := maps.Clone(cur.known)
	var errs []error
	for _, f := range names {
		specs, err := checkHistory(f, features[f])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if old, ok := known[f]; ok {
			if !sameHistory(old, specs) {
				errs = append(errs, specError(f, ErrConflictingSpec, "feature gate %q with different spec already exists: %s", f, formatHistory(old)))
			}
			continue
		}
		known[f] = specs
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	cur.known = known
	g.snap.Store(cur.rebuild())
	return nil
}

// registrationClosed says why registration is closed, nil if it is open. flagMsg is
// upstream's text for the flag case, the one closure reason upstream has.
func (g *Gate) registrationClosed(flagMsg string) error {
	switch {
	case g.frozen:
		return ErrFrozen
	case g.flagRegistered:
		return &flagRegisteredError{msg: flagMsg}
	case g.read.Load():
		return ErrAlreadyRead
	}
	return nil
}

// flagRegisteredError carries upstream's wording for "the flag was already registered".
type flagRegisteredError struct{ msg string }

func (e *flagRegisteredError) Error() string { return e.msg }
func (e *flagRegisteredError) Unwrap() error { return ErrFlagRegistered }

// Freeze makes the gate read-only: from now on Add, AddVersioned, AddDependencies, Set,
// SetFromMap, OverrideDefault, the version setters and ClientGoGates.SetForTesting fail
// with ErrFrozen. Call it once flags are parsed so nothing at run time can flip a gate.
// (featuregatetesting can still override features in tests.)
func (g *Gate) Freeze() {
	g.mu.Lock()
	g.frozen = true
	g.mu.Unlock()
}

// setting is one feature=value pair of a Set call, in input order.
type setting struct {
	f Feature
	v bool
}

// Set parses "A=true,B=false" and stores the values. Spaces around names and values are
// trimmed and empty entries skipped; values are anything strconv.ParseBool accepts. Values
// add to (and replace) earlier ones, and a feature named twice keeps its last value (only
// that one is checked); AllAlpha/AllBeta set every alpha/beta feature not set explicitly,
// whatever the order.
//
// Set is atomic: if any entry is malformed, unknown, locked to another value, PreAlpha at
// the emulated version, or leaves a feature on while one it depends on is off, it returns
// every such error (joined) and changes nothing, and a later Set starts from the unchanged
// state (upstream instead keeps the bad entry and fails every later Set). Setting a GA or
// deprecated feature works and logs a warning.
func (g *Gate) Set(value string) error {
	settings, err := parse(value)
	if err != nil {
		return err
	}
	return g.apply(lastWins(settings))
}

// lastWins keeps the last value of a feature named twice in one Set ("A=false,A=true"),
// as upstream does, so only that value is checked and stored.
func lastWins(settings []setting) []setting {
	last := make(map[Feature]int, len(settings))
	for i, s := range settings {
		last[s.f] = i
	}
	out := settings[:0:0]
	for i, s := range settings {
		if last[s.f] == i {
			out = append(out, s)
		}
	}
	return out
}

// SetFromMap stores the values of m with Set's rules (atomic, all errors reported).
func (g *Gate) SetFromMap(m map[string]bool) error {
	settings := make([]setting, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		settings = append(settings, setting{Feature(k), m[k]})
	}
	return g.apply(settings)
}

// parse splits a --feature-gates value into settings, reporting every malformed entry.
func parse(value string) ([]setting, error) {
	var (
		out  []setting
		errs []error
	)
	for entry := range strings.SplitSeq(value, ",") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		k, v, found := strings.Cut(entry, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if k == "" {
			errs = append(errs, &ParseError{Entry: entry, Value: v})
			continue
		}
		if !found {
			errs = append(errs, &ParseError{Entry: entry, Feature: Feature(k)})
			continue
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, &ParseError{Entry: entry, Feature: Feature(k), Value: v, Err: err})
			continue
		}
		out = append(out, setting{Feature(k), b})
	}
	return out, errors.Join(errs...)
}

func (g *Gate) apply(settings []setting) error {
	g.mu.Lock()
	if g.frozen {
		g.mu.Unlock()
		return fmt.Errorf("cannot set feature gates: %w", ErrFrozen)
	}
	cur := g.current()
	var errs []error
	for _, s := range settings {
		if err := cur.check(s.f, s.v); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		g.mu.Unlock()
		return errors.Join(errs...)
	}
	explicit := maps.Clone(cur.explicit)
	for _, s := range settings {
		explicit[s.f] = s.v
	}
	cur.explicit = explicit
	next := cur.rebuild()
	if errs := next.dependencyErrors(); len(errs) > 0 {
		g.mu.Unlock()
		return errors.Join(errs...)
	}
	g.snap.Store(next)
	g.mu.Unlock()

	logger := g.log()
	for _, s := range settings {
		switch next.specAt(s.f).PreRelease {
		case GA:
			if !isPseudo(s.f) {
				logger.Info("Warning: setting GA feature gate. It will be removed in a future release.", "featureGate", s.f, "value", s.v)
			}
		case Deprecated:
			logger.Info("Warning: setting deprecated feature gate. It will be removed in a future release.", "featureGate", s.f, "value", s.v)
		}
	}
	logger.V(1).Info("Updated feature gates", "featureGates", next.String())
	return nil
}

// check validates f=v against the snapshot's registry and versions.
func (s *snapshot) check(f Feature, v bool) error {
	specs, ok := s.known[f]
	if !ok {
		return &UnknownFeatureError{Feature: f}
	}
	spec := specAt(specs, s.emulation, s.minCompat)
	switch {
	case spec.LockToDefault && spec.Default != v:
		return &LockedError{Feature: f, Value: v, Default: spec.Default}
	case spec.PreRelease == PreAlpha:
		return &PreAlphaError{Feature: f, Value: v, EmulationVersion: s.emulation, MinCompatibilityVersion: s.minCompat}
	}
	return nil
}

// specAt is the spec of a known feature in force at the snapshot's versions.
func (s *snapshot) specAt(f Feature) FeatureSpec {
	return specAt(s.known[f], s.emulation, s.minCompat)
}

// rebuild resolves every feature and returns s with a fresh enabled map.
//
// Precedence: test override > explicit value > AllAlpha/AllBeta (for a feature at that
// stage, not locked) > the spec's default. PreAlpha features are false. Because AllAlpha and
// AllBeta are applied here, from the whole explicit set, the order in which values were set
// never matters.
func (s *snapshot) rebuild() *snapshot {
	lookup := func(f Feature) (bool, bool) {
		if v, ok := s.overrides[f]; ok {
			return v, true
		}
		v, ok := s.explicit[f]
		return v, ok
	}
	enabled := make(map[Feature]bool, len(s.known))
	for f, specs := range s.known {
		if v, ok := lookup(f); ok {
			enabled[f] = v
			continue
		}
		spec := specAt(specs, s.emulation, s.minCompat)
		v := spec.Default
		if !isPseudo(f) && !spec.LockToDefault {
			switch spec.PreRelease {
			case Alpha:
				if all, ok := lookup(AllAlpha); ok {
					v = all
				}
			case Beta:
				if all, ok := lookup(AllBeta); ok {
					v = all
				}
			}
		}
		enabled[f] = v
	}
	s.enabled = enabled
	return s
}

// KnownFeatures returns sorted help lines, one per feature that can be set at the emulated
// version, as upstream prints them: "A=true|false (BETA - default=true)". GA, deprecated
// and PreAlpha features are left out (upstream hides them: they are not meant to be
// toggled); AllAlpha and AllBeta are always listed. A feature whose spec changes once the
// min compatibility version reaches the emulation version gets both lines joined by
// ", or ", the second ending in " if --min-compatibility-version>=X", as upstream.
func (g *Gate) KnownFeatures() []string {
	s := g.load()
	lines := make([]string, 0, len(s.known))
	for f, specs := range s.known {
		if isPseudo(f) {
			lines = append(lines, helpLine(f, specs[0], false))
			continue
		}
		now, compat := indexAt(specs, s.emulation, s.minCompat), indexAt(specs, s.emulation, s.emulation)
		line := helpLine(f, specAt(specs, s.emulation, s.minCompat), false)
		if now != compat {
			var parts []string
			if line != "" {
				parts = append(parts, line)
			}
			if l := helpLine(f, specAt(specs, s.emulation, s.emulation), true); l != "" {
				parts = append(parts, l)
			}
			line = strings.Join(parts, ", or ")
		}
		if line != "" {
			lines = append(lines, line)
		}
	}
	sort.Strings(lines)
	return lines
}

// helpLine is one KnownFeatures line, "" for a stage that is not listed.
func helpLine(f Feature, spec FeatureSpec, withCompat bool) string {
	switch spec.PreRelease {
	case GA, Deprecated, PreAlpha:
		return ""
	}
	line := fmt.Sprintf("%s=true|false (%s - default=%t)", f, string(spec.PreRelease), spec.Default)
	if withCompat && spec.MinCompatibilityVersion != nil {
		line += fmt.Sprintf(" if --min-compatibility-version>=%s", spec.MinCompatibilityVersion)
	}
	return line
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

func (s *snapshot) String() string {
	pairs := make([]string, 0, len(s.explicit))
	for _, f := range slices.Sorted(maps.Keys(s.explicit)) {
		pairs = append(pairs, fmt.Sprintf("%s=%t", f, s.explicit[f]))
	}
	return strings.Join(pairs, ",")
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
