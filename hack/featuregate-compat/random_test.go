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
		usedPseudo := false
		var trace []string
		for step := range steps {
			var desc, errC, errU string
			setCall := false
			switch k := rng.IntN(10); {
			case k < 5: // Set of 0..3 entries, now and then a bad one
				var entries []string
				for range rng.IntN(4) {
					f := pickFeature(rng, allAlpha, allBeta)
					if strings.HasPrefix(f, "All") {
						usedPseudo = true
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
						v, usedPseudo = allAlpha, true
					case "AllBeta":
						v, usedPseudo = allBeta, true
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
			}
			trace = append(trace, desc+" -> "+errU)
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("seed %d run %d (start %s) step %d: "+format+"\ntrace:\n  %s", append(append([]any{seed, run, emu, step}, args...), strings.Join(trace, "\n  "))...)
			}
			if (errC == "") != (errU == "") || (!strings.Contains(errC, "\n") && !strings.HasPrefix(errU, "[") && errC != errU) {
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
			if c, u := ck.String(), up.String(); !usedPseudo && c != u {
				fail("after %s: String: ctrlkit %q, component-base %q", desc, c, u)
			}
			if setCall && errU != "" {
				break
			}
		}
	}
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
