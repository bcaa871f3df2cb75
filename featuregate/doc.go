// Package featuregate is a versioned feature-gate registry with the semantics Kubernetes
// users know from k8s.io/component-base/featuregate, without depending on component-base:
// the same --feature-gates syntax ("A=true,B=false"), the same stages (ALPHA, BETA, GA,
// DEPRECATED, and PRE-ALPHA before a feature exists), the same AllAlpha/AllBeta pseudo
// gates, the same error texts. A value that works for kube-controller-manager works here.
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
//	gate.AddFlag(pflag.CommandLine) // --feature-gates, help lists KnownFeatures
//	pflag.Parse()
//	gate.Freeze() // nothing can flip a gate at run time any more
//	if gate.Enabled("FastResync") { ... }
//
// Register first (Add, AddVersioned), then configure (Set, SetFromMap, the flag,
// SetEmulationVersion), then Freeze and read. Registration closes at the first Enabled, at
// AddFlag, or at Freeze, so a late Add cannot change behaviour that already ran.
//
// # Versions
//
// AddVersioned takes a feature's history, oldest first (alpha off at 1.30, beta on at
// 1.32, GA locked at 1.34). SetEmulationVersion (or WithEmulationVersion) picks the spec in
// force: the newest one not after the emulated version; before the first one the feature
// is PreAlpha: it reads false and cannot be set. Without an emulation version the newest
// spec applies. Histories are validated (increasing versions, no stage regression, no
// unlocking, ...).
//
// # Semantics worth knowing
//
//   - Enabled never panics. An unregistered feature reads false and is reported once per
//     gate and name via utilruntime.HandleErrorWithLogger (upstream panics instead).
//   - Set is atomic: a value with any bad entry returns every error (errors.Join) and leaves
//     the gate unchanged; the next Set starts from that state (upstream keeps the bad entry
//     and fails every later Set).
//   - Explicit values beat AllAlpha/AllBeta whatever the order they were set in;
//     AllAlpha/AllBeta leave locked features alone.
//   - Setting a GA or deprecated feature works and logs a structured warning
//     (key "featureGate") through the logger given by WithLogger.
//   - Errors match exported sentinels with errors.Is (ErrUnknownFeature, ErrLocked,
//     ErrPreAlpha, ...) and carry the culprit in typed errors for errors.As.
//
// # Reading is cheap
//
// Each mutation publishes an immutable snapshot through an atomic pointer; Enabled is a
// pointer load and a map lookup, lock-free and allocation-free (figures in
// docs/performance.md). Controllers can call it on every reconcile.
//
// # Tests
//
// Package featuregatetesting overrides a feature for one test and restores it in
// t.Cleanup, even on a gate that was read or frozen: it uses a test-only path
// (internal/override) that the rest of the program cannot reach.
package featuregate
