package compat

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// randomRegistry is registered in both gates of every random run: every stage, defaults
// on and off, GA locked, two versioned histories (one with a min compatibility entry) and
// two dependencies. It has no locked alpha or beta feature: AllAlpha/AllBeta treat those
// differently on purpose (see TestDeliberateDifferences).
var randomRegistry = []op{
	add(map[string]Spec{
		"A1": {Stage: "ALPHA"}, "A2": {Stage: "ALPHA", Default: true}, "AX": {Stage: "ALPHA"},
		"B1": {Stage: "BETA", Default: true}, "B2": {Stage: "BETA"}, "BC": {Stage: "BETA", Default: true},
		"G1": {Stage: "", Default: true, Locked: true}, "G2": {Stage: "", Default: true},
		"D1": {Stage: "DEPRECATED"},
	}),
	versioned,
	addDependencies(map[string][]string{"BC": {"B1"}, "AX": {"A1", "B1"}}),
}

var randomFeatures = []string{"A1", "A2", "AX", "B1", "B2", "BC", "G1", "G2", "D1", "Later", "Skew"}

// TestRandomSequences drives both implementations with random Set, SetFromMap,
// SetEmulationVersion(AndMinCompatibilityVersion) and OverrideDefault calls and compares
// errors, values, help lines and String after each. A run ends at its first failed Set or
// SetFromMap, after which upstream keeps failing on purpose of its own (see
// TestDeliberateDifferences). Inputs avoid the other deliberate differences: AllAlpha and
// AllBeta keep one value per run, and a call that fails for several reasons is compared
// on failing, not on text (upstream picks its first error in map order).
func TestRandomSequences(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	runs, steps := 400, 25
	if testing.Short() {
		runs = 50
	}
	versions := []string{"1.29", "1.30", "1.31", "1.32", "1.33", "1.34", "1.35", "1.36", "1.37", "1.38"}
	values := []string{"true", "false", "1", "0", "T", "f"}
	for run := range runs {
		emu := versions[rng.IntN(len(versions))]
		ck, up := newCtrlkit(emu), newUpstream(emu)
		for _, o := range randomRegistry {
			if c, u := o.do(ck, &side{}), o.do(up, &side{}); c != "" || u != "" {
				t.Fatalf("run %d: registration at %s: ctrlkit %q, component-base %q", run, emu, c, u)
			}
		}
		allAlpha, allBeta := rng.IntN(2) == 0, rng.IntN(2) == 0
		usedPseudo, setPseudo, poisoned, brokenDeps := false, false, false, false
		var trace []string
		ckSide, upSide := &side{name: "ctrlkit"}, &side{name: "component-base"}
		endAll := func() {
			for len(ckSide.overrides) > 0 || len(upSide.overrides) > 0 {
				endOverride().do(ck, ckSide)
				endOverride().do(up, upSide)
			}
		}
		for step := range steps {
			var desc, errC, errU string
			setCall := false
			k := rng.IntN(11)
			if k == 10 && (setPseudo || brokenDeps) {
				// Upstream's helper restores a feature it overrode to its default when it
				// was not set explicitly, dropping what a Set AllAlpha/AllBeta gave it;
				// ctrlkit restores exactly (see TestDeliberateDifferences). And once an
				// OverrideDefault left a feature on over a disabled dependency (neither
				// implementation checks there), upstream's restore fails on that state.
				k = rng.IntN(10)
			}
			if len(ckSide.overrides) > 0 {
				// While a test override lasts, only more overrides and their end: a Set
				// replaces an override upstream, whose helper stores it as a Set value
				// (in ctrlkit the override wins), and upstream's restore re-validates
				// dependencies that an OverrideDefault in between may have broken.
				k = []int{10, 11}[rng.IntN(2)]
			}
			switch {
			case k == 10: // a test override through each package's helper
				m := map[string]bool{}
				for range 1 + rng.IntN(2) {
					f := pickFeature(rng, allAlpha, allBeta)
					v := rng.IntN(2) == 0
					switch f {
					case "AllAlpha":
						v = allAlpha
					case "AllBeta":
						v = allBeta
					}
					m[f] = v
				}
				o := override(m)
				desc, setCall = o.desc+"("+strings.Join(mapEntries(m), ",")+")", true
				errC, errU = o.do(ck, ckSide), o.do(up, upSide)
				if strings.Contains(errU, "FAILED") {
					errC, errU = strings.TrimPrefix(errC, " "), strings.TrimPrefix(errU, " ")
				}
			case k == 11:
				desc = "end test override"
				errC, errU = endOverride().do(ck, ckSide), endOverride().do(up, upSide)
			case k < 5: // Set of 0..3 entries, now and then a bad one
				var entries []string
				for range rng.IntN(4) {
					f := pickFeature(rng, allAlpha, allBeta)
					if strings.HasPrefix(f, "All") {
						usedPseudo, setPseudo = true, true
					}
					switch r := rng.IntN(30); {
					case r == 0:
						entries = append(entries, f)
					case r == 1:
						entries = append(entries, f+"=maybe")
					case r == 2:
						entries = append(entries, "Nope=true")
					default:
						v := values[rng.IntN(len(values))]
						if f == "AllAlpha" || f == "AllBeta" {
							v = strconv.FormatBool(map[string]bool{"AllAlpha": allAlpha, "AllBeta": allBeta}[f])
						}
						entries = append(entries, " "+f+" = "+v)
					}
				}
				in := strings.Join(entries, ",")
				desc, setCall = "Set("+in+")", true
				errC, errU = errText(ck.Set(in)), errText(up.Set(in))
			case k < 7: // SetFromMap of one or two features
				m := map[string]bool{}
				for range 1 + rng.IntN(2) {
					f := pickFeature(rng, allAlpha, allBeta)
					v := rng.IntN(2) == 0
					switch f {
					case "AllAlpha":
						v, usedPseudo, setPseudo = allAlpha, true, true
					case "AllBeta":
						v, usedPseudo, setPseudo = allBeta, true, true
					}
					m[f] = v
				}
				desc, setCall = "SetFromMap("+strings.Join(mapEntries(m), ",")+")", true
				errC, errU = errText(ck.SetFromMap(m)), errText(up.SetFromMap(m))
			case k < 9: // versions
				e := versions[rng.IntN(len(versions))]
				minCompat := ""
				if rng.IntN(2) == 0 {
					minCompat = versions[rng.IntN(slices.Index(versions, e)+1)]
				}
				desc = "SetEmulation(" + e + ", " + minCompat + ")"
				errC, errU = errText(ck.SetEmulation(e, minCompat)), errText(up.SetEmulation(e, minCompat))
			default:
				f := randomFeatures[rng.IntN(len(randomFeatures))]
				v := rng.IntN(2) == 0
				desc = "OverrideDefault(" + f + ", " + strconv.FormatBool(v) + ")"
				errC, errU = errText(ck.OverrideDefault(f, v)), errText(up.OverrideDefault(f, v))
				// Both leave dependencies to the next Set: ask now.
				if probeC, probeU := errText(ck.Set("")), errText(up.Set("")); !sameError(probeC, probeU) {
					t.Fatalf("seed %d run %d: Set(\"\") after %s: ctrlkit %q, component-base %q", seed, run, desc, probeC, probeU)
				} else if probeU != "" {
					brokenDeps = true
				}
			}
			trace = append(trace, desc+" -> "+errU)
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("seed %d run %d (start %s) step %d: "+format+"\ntrace:\n  %s", append(append([]any{seed, run, emu, step}, args...), strings.Join(trace, "\n  "))...)
			}
			if !sameError(errC, errU) {
				fail("%s: ctrlkit %q, component-base %q", desc, errC, errU)
			}
			for _, f := range append([]string{"AllAlpha", "AllBeta"}, randomFeatures...) {
				if c, u := ck.Enabled(f), up.Enabled(f); c != u {
					fail("after %s: Enabled(%s): ctrlkit %t, component-base %t", desc, f, c, u)
				}
			}
			if c, u := ck.KnownFeatures(), up.KnownFeatures(); !slices.Equal(c, u) {
				fail("after %s: KnownFeatures:\n ctrlkit %q\n component-base %q", desc, c, u)
			}
			if c, u := ck.String(), up.String(); !usedPseudo && len(ckSide.overrides) == 0 && c != u {
				fail("after %s: String: ctrlkit %q, component-base %q", desc, c, u)
			}
			if strings.Contains(errU, "FAILED") {
				poisoned = true
				break
			}
			if setCall && errU != "" && !strings.HasPrefix(errU, "Disabling") {
				break
			}
		}
		endAll()
		if poisoned {
			continue // a failed override poisons upstream's gate until its restore fails too
		}
		for _, f := range append([]string{"AllAlpha", "AllBeta"}, randomFeatures...) {
			if c, u := ck.Enabled(f), up.Enabled(f); c != u {
				t.Fatalf("seed %d run %d: after the overrides ended: Enabled(%s): ctrlkit %t, component-base %t\ntrace:\n  %s", seed, run, f, c, u, strings.Join(trace, "\n  "))
			}
		}
	}
}

// sameError compares two answers: both succeed, or both fail with the same text; a call
// that fails for several reasons is compared on failing only (upstream's order is its
// map's, its format "[a, b]").
func sameError(c, u string) bool {
	if (c == "") != (u == "") {
		return false
	}
	return c == u || strings.Contains(c, "\n") || strings.HasPrefix(u, "[")
}

// pickFeature picks a registered feature, now and then a pseudo gate.
func pickFeature(rng *rand.Rand, allAlpha, allBeta bool) string {
	if rng.IntN(8) == 0 {
		return []string{"AllAlpha", "AllBeta"}[rng.IntN(2)]
	}
	return randomFeatures[rng.IntN(len(randomFeatures))]
}

func mapEntries(m map[string]bool) []string {
	var out []string
	for _, k := range sortedKeys(m) {
		out = append(out, k+"="+strconv.FormatBool(m[k]))
	}
	return out
}
