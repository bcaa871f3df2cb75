// Package featuregate is a versioned feature-gate registry with the semantics Kubernetes
// users know from k8s.io/component-base/featuregate, without depending on component-base:
// the same --feature-gates syntax ("A=true,B=false"), the same stages (ALPHA, BETA, GA,
// DEPRECATED, and PRE-ALPHA before a feature exists), the same AllAlpha/AllBeta pseudo
// gates, emulation and min compatibility versions, feature dependencies, default
// overrides, the kubernetes_feature_enabled gauge and the same error texts. A value that
// works for kube-controller-manager works here. hack/featuregate-compat runs the same
// inputs through both implementations and compares the answers.
//
// Use it to put controllers or code paths behind gates that operators switch with a flag,
// and to let the same flag drive client-go's own gates (ClientGoAdapter).
//
// # Lifecycle
//
//	gate := featuregate.New()
//	_ = gate.Add(map[featuregate.Feature]featuregate.FeatureSpec{
//		"FastResync": {Default: false, PreRelease: featuregate.Alpha},
//	})
//	_ = gate.OverrideDefault("FastResync", true) // this binary's own default, if any
//	gate.AddFlag(pflag.CommandLine)              // --feature-gates, help lists KnownFeatures
//	gate.AddVersionFlags(pflag.CommandLine)      // --emulated-version, --min-compatibility-version
//	pflag.Parse()
//	gate.Freeze() // nothing can flip a gate at run time any more
//	if gate.Enabled("FastResync") { ... }
//
// Register first (Add, AddVersioned, AddDependencies), then configure (OverrideDefault,
// Set, SetFromMap, the flags, SetEmulationVersion), then Freeze and read. Registration
// closes at the first Enabled, at AddFlag, or at Freeze, so a late Add cannot change
// behaviour that already ran. RegisterMetrics exports the gauge on a Prometheus registry.
//
// # Versions
//
// AddVersioned takes a feature's history, oldest first (alpha off at 1.30, beta on at
// 1.32, GA locked at 1.34). SetEmulationVersion (or WithEmulationVersion) picks the spec in
// force: the newest one not after the emulated version; before the first one the feature
// is PreAlpha: it reads false and cannot be set. Without an emulation version the newest
// spec applies. Histories are validated with component-base's rules and texts.
//
// The min compatibility version (SetEmulationVersionAndMinCompatibilityVersion,
// --min-compatibility-version; by default one minor before the emulation version) is the
// oldest version of the other components the binary must work with. An entry with a
// FeatureSpec.MinCompatibilityVersion applies only once the min compatibility version
// reaches it, so a feature with skew concerns turns on by default only when no older peer
// is left.
//
// # Dependencies
//
// AddDependencies declares that a feature needs others. The declaration is checked against
// every version of the histories (no default-on feature on a default-off one, no stable
// feature on a less stable one, no cycles), and the gate never reaches a state in which a
// feature is on while one it needs is off: such a Set fails (ErrInvalidValue, ReasonDependency).
//
// # Semantics worth knowing
//
//   - Enabled never panics. An unregistered feature reads false and is reported once per
//     gate and name via utilruntime.HandleErrorWithLogger (upstream panics instead).
//   - Set is atomic: a value with any bad entry returns every error (errors.Join) and leaves
//     the gate unchanged; the next Set starts from that state.
//   - Explicit values beat AllAlpha/AllBeta whatever the order they were set in;
//     AllAlpha/AllBeta leave locked features alone.
//   - Setting a GA or deprecated feature (or overriding its default) works and logs a
//     structured warning (key "featureGate") through the logger given by WithLogger.
//   - Errors match one of four sentinels with errors.Is (ErrUnknownFeature, ErrInvalidValue,
//     ErrInvalidSpec, ErrClosed); errors.As gives an *Error with the Reason and the culprit.
//
// # Differences from component-base
//
// Checked against component-base v0.37.2. Everything not listed here is meant to match it
// input for input; the differences in behaviour are exercised side by side by
// hack/featuregate-compat (TestDeliberateDifferences, and the normalisations its other
// tests document).
//
//   - String() lists the values set with Set/SetFromMap, nothing else. Upstream lists its
//     resolved map, which also holds the values AllAlpha/AllBeta derived and the test
//     helper's overrides. Ours round-trips: fed back to Set on a gate with the same
//     features it reproduces the state, with AllAlpha/AllBeta still applying to features
//     nobody named; upstream's, fed back, turns derived values into explicit ones.
//   - AllAlpha=true then AllAlpha=false (in two Sets) turns the unnamed alpha features off
//     again. Upstream keeps them on until the versions change, because its second Set only
//     fills features it has no value for yet; a value must not depend on the history of
//     a pseudo gate.
//   - AllAlpha/AllBeta (flags and test overrides alike) leave features locked to their
//     default alone. Upstream's AllBeta flips a locked beta feature, and its test helper
//     fails on a locked alpha or beta feature. A lock promises the default; an explicit
//     Set of the other value is refused by both, and a pseudo gate is not more explicit.
//   - A failed Set changes nothing. Upstream stores the bad entry first, so every later
//     Set fails too.
//   - Several errors in one call are all returned, in name order, joined with newlines.
//     Upstream stops at the first unknown feature and aggregates the rest as "[a, b]" in
//     map order. A single error has the same text in both.
//   - An entry without a name ("=true") is "missing feature name in \"=true\"" rather
//     than upstream's "unrecognized feature gate: " (an empty name).
//   - Without an emulation version each feature's newest spec applies and no min
//     compatibility bound holds unless one is set; upstream always emulates its binary
//     version.
//   - Add honours FeatureSpec.Version (upstream resets it to 0.0). Registration also
//     rejects an empty history (upstream: PreAlpha forever), an unknown stage, and a name
//     --feature-gates cannot spell; and it closes at the first Enabled and at Freeze as
//     well as at AddFlag (AddDependencies too).
//   - SetEmulationVersionAndMinCompatibilityVersion refuses a min compatibility version
//     after the emulation version, with the text upstream's compatibility package gives
//     for it; upstream's gate accepts it.
//   - Enabled of an unregistered feature reads false instead of panicking.
//   - DeepCopy starts unread, unfrozen and without a registered flag, so the copy can be
//     configured (upstream's copy stays closed if the original was).
//   - The test overrides of package featuregatetesting are not Set values: they do not
//     show in String, win over a Set made while they last (upstream's helper stores them
//     with SetFromMap, so a later Set replaces them), work on a frozen gate, and end by
//     restoring the exact state before them (upstream's helper resets a feature nobody had
//     named to its default, dropping a value AllAlpha/AllBeta had given it). A failed
//     override fails the test with Fatalf where upstream's helper uses Errorf.
//   - The metrics collector reads the current values at every scrape; upstream's
//     AddMetrics records them once.
//   - Not provided: upstream's Validate, ExplicitlySet, ResetFeatureValueToDefault,
//     GetAll/GetAllVersioned, DeepCopyAndReset and the *WithLogger variants (the gate's
//     logger comes from WithLogger).
//
// # Reading is cheap
//
// Each mutation publishes an immutable snapshot through an atomic pointer; Enabled is a
// pointer load and a map lookup, lock-free and allocation-free (figures in
// docs/performance.md). Controllers can call it on every reconcile.
//
// # Tests
//
// Package featuregatetesting overrides features for one test and restores them in
// t.Cleanup, even on a gate that was read or frozen: it uses a test-only path
// (internal/override) that the rest of the program cannot reach. As upstream's helper, an
// AllAlpha/AllBeta override wins over values set with Set, and turning a feature off turns
// off what depends on it. SetEmulationVersionDuringTest and SetVersionsDuringTest switch the
// versions for one test the same way.
package featuregate
