package featuregate

import (
	"k8s.io/apimachinery/pkg/util/version"
)

// Feature is the name of a feature gate, as users type it in --feature-gates.
type Feature string

// Stage is the maturity of a feature at some version. The string values are the ones
// Kubernetes prints in help text, so a flag that works for kube-controller-manager reads
// the same here.
type Stage string

const (
	// PreAlpha is the stage of a feature at a version before its first spec: it exists in
	// the code but is not available. It cannot be set and reads as disabled. It is never
	// registered explicitly; it is implied before the first entry of a feature's history.
	PreAlpha Stage = "PRE-ALPHA"
	// Alpha features are off by default and may change or disappear.
	Alpha Stage = "ALPHA"
	// Beta features are well tested; often on by default.
	Beta Stage = "BETA"
	// GA features are stable. Their gate is kept for a while (usually locked) and then
	// removed; setting it logs a warning. GA is the empty string, as upstream.
	GA Stage = ""
	// Deprecated features are on their way out; setting one logs a warning.
	Deprecated Stage = "DEPRECATED"
)

// String returns the stage as Kubernetes prints it ("GA" for the empty GA value).
func (s Stage) String() string {
	if s == GA {
		return "GA"
	}
	return string(s)
}

// rank orders the registrable stages by maturity; Deprecated is terminal and handled apart.
func (s Stage) rank() int {
	switch s {
	case Alpha:
		return 1
	case Beta:
		return 2
	case GA:
		return 3
	case Deprecated:
		return 4
	default:
		return -1
	}
}

// FeatureSpec describes a feature from one version on.
type FeatureSpec struct {
	// Default is the value of the feature when nobody sets it.
	Default bool
	// LockToDefault refuses any attempt to set the feature to a value other than Default
	// (typical for GA features whose old code path is gone).
	LockToDefault bool
	// PreRelease is the maturity of the feature. The zero value is GA.
	PreRelease Stage
	// Version is the first version this spec applies to (major.minor). For Add it may be
	// nil, meaning "from the beginning" (0.0); AddVersioned requires it on every entry.
	Version *version.Version
	// MinCompatibilityVersion, when set, makes this spec apply only once the gate's min
	// compatibility version (see SetEmulationVersionAndMinCompatibilityVersion) is at
	// least this version. It lets a feature with cross-component skew concerns turn on by
	// default only after every component it talks to is new enough. It must follow an
	// entry at the same Version without it, and is at most Version; a later entry that
	// leaves it nil inherits it (as upstream).
	MinCompatibilityVersion *version.Version
}

// VersionedSpecs is the history of one feature, oldest first: e.g. alpha and off at 1.30,
// beta and on at 1.32, GA and locked at 1.34. The spec in force at an emulation version is
// the newest entry whose Version is not after it.
type VersionedSpecs []FeatureSpec

// Gates is the read-only view of a feature gate that consumers (manager.Manager, your
// controllers) accept. *Gate implements it; so can a test fake.
type Gates interface {
	// Enabled reports whether the feature is on. It never panics: an unregistered
	// feature reads as disabled (see (*Gate).Enabled).
	Enabled(f Feature) bool
	// KnownFeatures returns sorted help lines for the settable features, e.g.
	// "A=true|false (BETA - default=true)".
	KnownFeatures() []string
}

// The pseudo gates that set every alpha or beta feature nobody set explicitly.
const (
	// AllAlpha=true|false sets every Alpha feature that was not set explicitly.
	AllAlpha Feature = "AllAlpha"
	// AllBeta=true|false sets every Beta feature that was not set explicitly.
	AllBeta Feature = "AllBeta"
)

// pseudoSpecs are registered in every gate, as upstream does.
var pseudoSpecs = map[Feature]FeatureSpec{
	AllAlpha: {Default: false, PreRelease: Alpha, Version: version.MajorMinor(0, 0)},
	AllBeta:  {Default: false, PreRelease: Beta, Version: version.MajorMinor(0, 0)},
}

func isPseudo(f Feature) bool { return f == AllAlpha || f == AllBeta }
