package compat

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/version"
	basefg "k8s.io/component-base/featuregate"
	basetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/featuregate"
	"github.com/ctrlkit/ctrlkit/featuregate/featuregatetesting"
)

// Spec is one history entry, written once and converted for each implementation.
type Spec struct {
	Version, MinCompat string // "" = nil
	Stage              string // "ALPHA", "BETA", "" (GA), "DEPRECATED"
	Default, Locked    bool
}

// driver is what a scenario can do to a gate. Both implementations satisfy it.
type driver interface {
	AddVersioned(map[string][]Spec) error
	Add(map[string]Spec) error
	AddDependencies(map[string][]string) error
	SetEmulation(emu, minCompat string) error
	Set(string) error
	SetFromMap(map[string]bool) error
	OverrideDefault(f string, v bool) error
	OverrideDefaultAtVersion(f string, v bool, ver string) error
	AddFlag()
	// Override runs the package's test helper with a recording TB; the returned func
	// runs the helper's cleanups (the end of the test).
	Override(name string, values map[string]bool) (rec *recorder, end func())
	// OverrideVersions runs the package's versions test helper
	// (SetVersionsDuringTest / SetFeatureGateVersionsDuringTest) the same way.
	OverrideVersions(name, emu, minCompat string) (rec *recorder, end func())
	Enabled(f string) bool
	KnownFeatures() []string
	String() string
	EmulationVersion() string
	MinCompatibilityVersion() string
}

func ver(s string) *version.Version {
	if s == "" {
		return nil
	}
	return version.MustParse(s)
}

// verString prints a version, "" for nil.
func verString(v *version.Version) string {
	if v == nil {
		return ""
	}
	return v.String()
}

// ---- what both drivers do the same way ----

// gate is what the two gates have in common; F is each one's feature name type.
type gate[F ~string] interface {
	AddDependencies(map[F][]F) error
	SetEmulationVersion(*version.Version) error
	SetEmulationVersionAndMinCompatibilityVersion(emu, minCompat *version.Version) error
	Set(string) error
	SetFromMap(map[string]bool) error
	OverrideDefault(F, bool) error
	OverrideDefaultAtVersion(F, bool, *version.Version) error
	AddFlag(*pflag.FlagSet)
	Enabled(F) bool
	KnownFeatures() []string
	EmulationVersion() *version.Version
	MinCompatibilityVersion() *version.Version
}

// common implements the driver methods whose only difference between the two gates is the
// feature name type; each driver embeds it and adds the rest.
type common[F ~string, G gate[F]] struct{ g G }

func (c common[F, G]) AddDependencies(m map[string][]string) error {
	in := map[F][]F{}
	for f, deps := range m {
		for _, dep := range deps {
			in[F(f)] = append(in[F(f)], F(dep))
		}
	}
	return c.g.AddDependencies(in)
}

func (c common[F, G]) SetEmulation(emu, minCompat string) error {
	if minCompat == "" {
		return c.g.SetEmulationVersion(ver(emu))
	}
	return c.g.SetEmulationVersionAndMinCompatibilityVersion(ver(emu), ver(minCompat))
}

func (c common[F, G]) Set(s string) error                 { return c.g.Set(s) }
func (c common[F, G]) SetFromMap(m map[string]bool) error { return c.g.SetFromMap(m) }
func (c common[F, G]) OverrideDefault(f string, v bool) error {
	return c.g.OverrideDefault(F(f), v)
}
func (c common[F, G]) OverrideDefaultAtVersion(f string, v bool, at string) error {
	return c.g.OverrideDefaultAtVersion(F(f), v, ver(at))
}
func (c common[F, G]) AddFlag()                 { c.g.AddFlag(pflag.NewFlagSet("x", pflag.ContinueOnError)) }
func (c common[F, G]) Enabled(f string) bool    { return c.g.Enabled(F(f)) }
func (c common[F, G]) KnownFeatures() []string  { return c.g.KnownFeatures() }
func (c common[F, G]) EmulationVersion() string { return verString(c.g.EmulationVersion()) }
func (c common[F, G]) MinCompatibilityVersion() string {
	return verString(c.g.MinCompatibilityVersion())
}

// keyed re-keys m by a gate's feature name type and converts its values.
func keyed[M ~map[F]W, F ~string, V, W any](m map[string]V, conv func(V) W) M {
	out := M{}
	for f, v := range m {
		out[F(f)] = conv(v)
	}
	return out
}

// histories converts feature histories, entry by entry.
func histories[F ~string, H ~[]S, S any](m map[string][]Spec, spec func(Spec) S) map[F]H {
	return keyed[map[F]H](m, func(specs []Spec) H {
		h := H{}
		for _, s := range specs {
			h = append(h, spec(s))
		}
		return h
	})
}

func same[V any](v V) V { return v }

// ---- ctrlkit ----

type ctrlkitDriver struct {
	common[featuregate.Feature, *featuregate.Gate]
}

func newCtrlkit(emu string) *ctrlkitDriver {
	g := featuregate.New(featuregate.WithLogger(klog.Logger{}), featuregate.WithEmulationVersion(ver(emu)))
	return &ctrlkitDriver{common[featuregate.Feature, *featuregate.Gate]{g}}
}

func (d *ctrlkitDriver) spec(s Spec) featuregate.FeatureSpec {
	return featuregate.FeatureSpec{Default: s.Default, LockToDefault: s.Locked, PreRelease: featuregate.Stage(s.Stage),
		Version: ver(s.Version), MinCompatibilityVersion: ver(s.MinCompat)}
}

func (d *ctrlkitDriver) AddVersioned(m map[string][]Spec) error {
	return d.g.AddVersioned(histories[featuregate.Feature, featuregate.VersionedSpecs](m, d.spec))
}

func (d *ctrlkitDriver) Add(m map[string]Spec) error {
	return d.g.Add(keyed[map[featuregate.Feature]featuregate.FeatureSpec](m, d.spec))
}

func (d *ctrlkitDriver) Override(name string, values map[string]bool) (*recorder, func()) {
	rec := &recorder{name: name}
	featuregatetesting.SetManyDuringTest(rec, d.g, keyed[map[featuregate.Feature]bool](values, same))
	return rec, rec.end
}

func (d *ctrlkitDriver) OverrideVersions(name, emu, minCompat string) (*recorder, func()) {
	rec := &recorder{name: name}
	featuregatetesting.SetVersionsDuringTest(rec, d.g, ver(emu), ver(minCompat))
	return rec, rec.end
}

func (d *ctrlkitDriver) String() string { return d.g.String() }

// ---- component-base ----

type upstreamDriver struct {
	common[basefg.Feature, basefg.MutableVersionedFeatureGate]
}

func newUpstream(emu string) *upstreamDriver {
	return &upstreamDriver{common[basefg.Feature, basefg.MutableVersionedFeatureGate]{basefg.NewVersionedFeatureGate(ver(emu))}}
}

func (d *upstreamDriver) spec(s Spec) basefg.FeatureSpec {
	spec := basefg.FeatureSpec{Default: s.Default, LockToDefault: s.Locked,
		Version: ver(s.Version), MinCompatibilityVersion: ver(s.MinCompat)}
	// The stage's type is unexported upstream: assign its constants.
	switch s.Stage {
	case "ALPHA":
		spec.PreRelease = basefg.Alpha
	case "BETA":
		spec.PreRelease = basefg.Beta
	case "":
		spec.PreRelease = basefg.GA
	case "DEPRECATED":
		spec.PreRelease = basefg.Deprecated
	default:
		panic("scenario uses an unknown stage " + s.Stage)
	}
	return spec
}

func (d *upstreamDriver) AddVersioned(m map[string][]Spec) error {
	return d.g.AddVersioned(histories[basefg.Feature, basefg.VersionedSpecs](m, d.spec))
}

func (d *upstreamDriver) Add(m map[string]Spec) error {
	return d.g.Add(keyed[map[basefg.Feature]basefg.FeatureSpec](m, d.spec))
}

func (d *upstreamDriver) Override(name string, values map[string]bool) (*recorder, func()) {
	rec := &recorder{name: name}
	basetesting.SetFeatureGatesDuringTest(rec, d.g, keyed[basetesting.FeatureOverrides](values, same))
	return rec, rec.end
}

func (d *upstreamDriver) OverrideVersions(name, emu, minCompat string) (*recorder, func()) {
	rec := &recorder{name: name}
	basetesting.SetFeatureGateVersionsDuringTest(rec, d.g, ver(emu), ver(minCompat))
	return rec, rec.end
}

func (d *upstreamDriver) String() string { return d.g.(fmt.Stringer).String() }

// ---- a testing.TB stand-in for both helpers ----

// recorder implements what both test helpers call on their TB and records failures and
// log lines instead of failing the real test; end runs the registered cleanups.
type recorder struct {
	testing.TB // nil: every method the helpers call is defined below
	name       string
	failures   []string
	logs       []string
	cleanups   []func()
}

func (r *recorder) Helper()      {}
func (r *recorder) Name() string { return r.name }
func (r *recorder) Cleanup(f func()) {
	r.cleanups = append(r.cleanups, f)
}
func (r *recorder) Logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	// ktesting's log lines (upstream's SetFromMap logs through it) are not compared.
	if strings.HasPrefix(line, "Disabling feature ") {
		r.logs = append(r.logs, line)
	}
}
func (r *recorder) Log(args ...any)   {}
func (r *recorder) Error(args ...any) { r.failures = append(r.failures, fmt.Sprint(args...)) }
func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatal(args ...any) { r.failures = append(r.failures, fmt.Sprint(args...)) }
func (r *recorder) Fatalf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *recorder) end() {
	for _, f := range slices.Backward(r.cleanups) {
		f()
	}
	r.cleanups = nil
}

// sortedKeys is the map's keys in order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
