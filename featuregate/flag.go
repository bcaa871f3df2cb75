package featuregate

import (
	"flag"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/version"
)

// FlagName is the flag AddFlag and AddGoFlag register, as in every Kubernetes component.
const FlagName = "feature-gates"

var (
	_ pflag.Value = (*Gate)(nil)
	_ flag.Value  = (*Gate)(nil)
)

// Type implements pflag.Value ("mapStringBool", as upstream).
func (g *Gate) Type() string { return "mapStringBool" }

// AddFlag registers --feature-gates on fs; its help text lists KnownFeatures. Each use of
// the flag calls Set, so values from repeated flags accumulate.
//
// Registration closes here (later Add fails with ErrClosed, ReasonFlagRegistered) because the help text
// is captured now and a feature added later would be settable but undocumented.
func (g *Gate) AddFlag(fs *pflag.FlagSet) {
	fs.Var(g, FlagName, g.flagUsage())
}

// AddGoFlag is AddFlag for the standard library's flag package. (*Gate itself is a
// flag.Value, so flag.Var(gate, ...) works too, with your own name and usage.)
func (g *Gate) AddGoFlag(fs *flag.FlagSet) {
	fs.Var(g, FlagName, g.flagUsage())
}

// flagUsage closes registration and returns the help text.
func (g *Gate) flagUsage() string {
	g.mu.Lock()
	g.flagRegistered = true
	g.mu.Unlock()
	return "A set of key=value pairs that describe feature gates for alpha/experimental features. " +
		"Options are:\n" + strings.Join(g.KnownFeatures(), "\n")
}

// The version flags AddVersionFlags registers, named as component-base's compatibility
// package names them for every Kubernetes component.
const (
	EmulatedVersionFlagName         = "emulated-version"
	MinCompatibilityVersionFlagName = "min-compatibility-version"
)

// AddVersionFlags registers --emulated-version and --min-compatibility-version on fs.
// Values are major.minor ("1.31"); upstream's per-component form ("kube=1.31") is not
// accepted, a gate being one component. Whatever their order on the command line, the
// result is SetEmulationVersionAndMinCompatibilityVersion(emulated, min), min defaulting to
// one minor before emulated. Feature values given with --feature-gates are re-checked at
// the new versions.
func (g *Gate) AddVersionFlags(fs *pflag.FlagSet) {
	vf := &versionFlags{g: g}
	fs.Var(&versionFlag{vf: vf}, EmulatedVersionFlagName,
		"The version the component emulates its features of, major.minor (for example 1.31). "+
			"Features are as they were at that version.")
	fs.Var(&versionFlag{vf: vf, min: true}, MinCompatibilityVersionFlagName,
		"The min version of control plane components the component should be compatible with, major.minor. "+
			"Must be less or equal to the emulated-version. Defaults to one minor before it.")
}

// versionFlags holds what the two version flags were given, so that their order does not
// matter.
type versionFlags struct {
	g        *Gate
	emu, min *version.Version
}

// versionFlag is one of the two flags; min says which.
type versionFlag struct {
	vf  *versionFlags
	min bool
}

func (f *versionFlag) Type() string { return "string" }

func (f *versionFlag) String() string {
	if f.vf == nil {
		return ""
	}
	v := f.vf.g.EmulationVersion()
	if f.min {
		v = f.vf.g.MinCompatibilityVersion()
	}
	if v == nil {
		return ""
	}
	return v.String()
}

func (f *versionFlag) Set(value string) error {
	v, err := version.Parse(strings.TrimSpace(value))
	if err != nil {
		return badVersionFlag(value, err, "invalid feature gate version %q: %v", value, err)
	}
	if v.Patch() != 0 {
		return badVersionFlag(value, nil, "invalid feature gate version: patch version not allowed, got: %s", v)
	}
	v = version.MajorMinor(v.Major(), v.Minor())
	if f.min {
		f.vf.min = v
	} else {
		f.vf.emu = v
	}
	emu := f.vf.emu
	if emu == nil {
		emu = f.vf.g.EmulationVersion()
	}
	return f.vf.g.SetEmulationVersionAndMinCompatibilityVersion(emu, f.vf.min)
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
