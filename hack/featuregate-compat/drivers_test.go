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

// ---- ctrlkit ----

type ctrlkitDriver struct{ g *featuregate.Gate }

func newCtrlkit(emu string) *ctrlkitDriver {
	return &ctrlkitDriver{g: featuregate.New(featuregate.WithLogger(klog.Logger{}), featuregate.WithEmulationVersion(ver(emu)))}
}

func (d *ctrlkitDriver) spec(s Spec) featuregate.FeatureSpec {
	return featuregate.FeatureSpec{Default: s.Default, LockToDefault: s.Locked, PreRelease: featuregate.Stage(s.Stage),
		Version: ver(s.Version), MinCompatibilityVersion: ver(s.MinCompat)}
}

func (d *ctrlkitDriver) AddVersioned(m map[string][]Spec) error {
	in := map[featuregate.Feature]featuregate.VersionedSpecs{}
	for f, specs := range m {
		vs := featuregate.VersionedSpecs{}
		for _, s := range specs {
			vs = append(vs, d.spec(s))
		}
		in[featuregate.Feature(f)] = vs
	}
	return d.g.AddVersioned(in)
}

func (d *ctrlkitDriver) Add(m map[string]Spec) error {
	in := map[featuregate.Feature]featuregate.FeatureSpec{}
	for f, s := range m {
		in[featuregate.Feature(f)] = d.spec(s)
	}
	return d.g.Add(in)
}

func (d *ctrlkitDriver) AddDependencies(m map[string][]string) error {
	in := map[featuregate.Feature][]featuregate.Feature{}
	for f, deps := range m {
		for _, dep := range deps {
			in[featuregate.Feature(f)] = append(in[featuregate.Feature(f)], featuregate.Feature(dep))
		}
	}
	return d.g.AddDependencies(in)
}

func (d *ctrlkitDriver) SetEmulation(emu, minCompat string) error {
	if minCompat == "" {
		return d.g.SetEmulationVersion(ver(emu))
	}
	return d.g.SetEmulationVersionAndMinCompatibilityVersion(ver(emu), ver(minCompat))
}

func (d *ctrlkitDriver) Set(s string) error                 { return d.g.Set(s) }
func (d *ctrlkitDriver) SetFromMap(m map[string]bool) error { return d.g.SetFromMap(m) }
func (d *ctrlkitDriver) OverrideDefault(f string, v bool) error {
	return d.g.OverrideDefault(featuregate.Feature(f), v)
}
func (d *ctrlkitDriver) OverrideDefaultAtVersion(f string, v bool, at string) error {
	return d.g.OverrideDefaultAtVersion(featuregate.Feature(f), v, ver(at))
}
func (d *ctrlkitDriver) AddFlag() { d.g.AddFlag(pflag.NewFlagSet("x", pflag.ContinueOnError)) }

func (d *ctrlkitDriver) Override(name string, values map[string]bool) (*recorder, func()) {
	rec := &recorder{name: name}
	in := map[featuregate.Feature]bool{}
	for f, v := range values {
		in[featuregate.Feature(f)] = v
	}
	featuregatetesting.SetManyDuringTest(rec, d.g, in)
	return rec, rec.end
}

func (d *ctrlkitDriver) OverrideVersions(name, emu, minCompat string) (*recorder, func()) {
	rec := &recorder{name: name}
	featuregatetesting.SetVersionsDuringTest(rec, d.g, ver(emu), ver(minCompat))
	return rec, rec.end
}

func (d *ctrlkitDriver) Enabled(f string) bool    { return d.g.Enabled(featuregate.Feature(f)) }
func (d *ctrlkitDriver) KnownFeatures() []string  { return d.g.KnownFeatures() }
func (d *ctrlkitDriver) String() string           { return d.g.String() }
func (d *ctrlkitDriver) EmulationVersion() string { return verString(d.g.EmulationVersion()) }
func (d *ctrlkitDriver) MinCompatibilityVersion() string {
	return verString(d.g.MinCompatibilityVersion())
}

// ---- component-base ----

type upstreamDriver struct {
	g basefg.MutableVersionedFeatureGate
}

func newUpstream(emu string) *upstreamDriver {
	return &upstreamDriver{g: basefg.NewVersionedFeatureGate(ver(emu))}
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
	in := map[basefg.Feature]basefg.VersionedSpecs{}
	for f, specs := range m {
		vs := basefg.VersionedSpecs{}
		for _, s := range specs {
			vs = append(vs, d.spec(s))
		}
		in[basefg.Feature(f)] = vs
	}
	return d.g.AddVersioned(in)
}

func (d *upstreamDriver) Add(m map[string]Spec) error {
	in := map[basefg.Feature]basefg.FeatureSpec{}
	for f, s := range m {
		in[basefg.Feature(f)] = d.spec(s)
	}
	return d.g.Add(in)
}

func (d *upstreamDriver) AddDependencies(m map[string][]string) error {
	in := map[basefg.Feature][]basefg.Feature{}
	for f, deps := range m {
		for _, dep := range deps {
			in[basefg.Feature(f)] = append(in[basefg.Feature(f)], basefg.Feature(dep))
		}
	}
	return d.g.AddDependencies(in)
}

func (d *upstreamDriver) SetEmulation(emu, minCompat string) error {
	if minCompat == "" {
		return d.g.SetEmulationVersion(ver(emu))
	}
	return d.g.SetEmulationVersionAndMinCompatibilityVersion(ver(emu), ver(minCompat))
}

func (d *upstreamDriver) Set(s string) error                 { return d.g.Set(s) }
func (d *upstreamDriver) SetFromMap(m map[string]bool) error { return d.g.SetFromMap(m) }
func (d *upstreamDriver) OverrideDefault(f string, v bool) error {
	return d.g.OverrideDefault(basefg.Feature(f), v)
}
func (d *upstreamDriver) OverrideDefaultAtVersion(f string, v bool, at string) error {
	return d.g.OverrideDefaultAtVersion(basefg.Feature(f), v, ver(at))
}
func (d *upstreamDriver) AddFlag() { d.g.AddFlag(pflag.NewFlagSet("x", pflag.ContinueOnError)) }

func (d *upstreamDriver) Override(name string, values map[string]bool) (*recorder, func()) {
	rec := &recorder{name: name}
	in := basetesting.FeatureOverrides{}
	for f, v := range values {
		in[basefg.Feature(f)] = v
	}
	basetesting.SetFeatureGatesDuringTest(rec, d.g, in)
	return rec, rec.end
}

func (d *upstreamDriver) OverrideVersions(name, emu, minCompat string) (*recorder, func()) {
	rec := &recorder{name: name}
	basetesting.SetFeatureGateVersionsDuringTest(rec, d.g, ver(emu), ver(minCompat))
	return rec, rec.end
}

func (d *upstreamDriver) Enabled(f string) bool    { return d.g.Enabled(basefg.Feature(f)) }
func (d *upstreamDriver) KnownFeatures() []string  { return d.g.KnownFeatures() }
func (d *upstreamDriver) String() string           { return d.g.(fmt.Stringer).String() }
func (d *upstreamDriver) EmulationVersion() string { return verString(d.g.EmulationVersion()) }
func (d *upstreamDriver) MinCompatibilityVersion() string {
	return verString(d.g.MinCompatibilityVersion())
}

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
