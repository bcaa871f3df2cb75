package compat

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// op is one input, applied to both implementations.
type op struct {
	desc string
	do   func(d driver, s *side) string // returns the error text, "" for success
	// registers lists the features the op registers when it succeeds.
	registers []string
	// registration ops come before the gate is read (ctrlkit closes registration at the
	// first Enabled); the state is compared after every other op.
	registration bool

	// A deliberate difference (documented in the featuregate package doc): the reason,
	// and what each side answers instead of a common answer.
	deliberate              string
	ctrlkitErr, upstreamErr string
	// enabledDiff lists features whose value differs on purpose after this op:
	// {ctrlkit, upstream}; converges lists features that agree again after it.
	enabledDiff map[string][2]bool
	converges   []string
	// fails, when set, says whether upstream must reject the op (so that a case meant
	// to compare an error text cannot pass by both sides accepting it).
	fails *bool
}

// side is one implementation's running state in a scenario.
type side struct {
	name      string
	d         driver
	overrides []*recorder
}

type scenario struct {
	name string
	emu  string // the version both gates start at
	ops  []op
	// skipString: String() differs on purpose once AllAlpha/AllBeta were set (see the
	// package doc); compared everywhere else.
	skipString bool
	// skipKnown: KnownFeatures differs on purpose (a deliberate difference in what is
	// registered).
	skipKnown bool
}

func runScenarios(t *testing.T, scenarios []scenario) {
	t.Helper()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) { runScenario(t, sc) })
	}
}

func runScenario(t *testing.T, sc scenario) {
	ck := &side{name: "ctrlkit", d: newCtrlkit(sc.emu)}
	up := &side{name: "component-base", d: newUpstream(sc.emu)}
	// Overrides left open by a failed comparison still end, so the helpers' global
	// bookkeeping does not leak into the next scenario.
	defer func() {
		for len(ck.overrides) > 0 || len(up.overrides) > 0 {
			endOverride().do(ck.d, ck)
			endOverride().do(up.d, up)
		}
	}()
	features := []string{"AllAlpha", "AllBeta"}
	diffs := map[string][2]bool{}
	for i, o := range sc.ops {
		errC, errU := o.do(ck.d, ck), o.do(up.d, up)
		switch {
		case o.deliberate != "":
			if errC != o.ctrlkitErr || errU != o.upstreamErr {
				t.Fatalf("op %d (%s), deliberate difference (%s):\n ctrlkit:        %q (want %q)\n component-base: %q (want %q)",
					i, o.desc, o.deliberate, errC, o.ctrlkitErr, errU, o.upstreamErr)
			}
		case errC != errU:
			t.Fatalf("op %d (%s): errors differ:\n ctrlkit:        %q\n component-base: %q", i, o.desc, errC, errU)
		}
		if o.fails != nil && (errU != "") != *o.fails {
			t.Fatalf("op %d (%s): component-base answered %q; the case expects it to fail: %t", i, o.desc, errU, *o.fails)
		}
		if errU != "" {
			t.Logf("op %d (%s): both answer %q", i, o.desc, errU)
		}
		if errU == "" {
			for _, f := range o.registers {
				if !slices.Contains(features, f) {
					features = append(features, f)
				}
			}
		}
		maps.Copy(diffs, o.enabledDiff)
		for _, f := range o.converges {
			delete(diffs, f)
		}
		if o.registration {
			continue
		}
		compareState(t, i, o.desc, sc, ck, up, features, diffs)
	}
	// End every test override, innermost first, and compare the restored state.
	for len(ck.overrides) > 0 || len(up.overrides) > 0 {
		endOverride().do(ck.d, ck)
		endOverride().do(up.d, up)
	}
	compareState(t, len(sc.ops), "after every override ended", sc, ck, up, features, diffs)
}

func compareState(t *testing.T, i int, desc string, sc scenario, ck, up *side, features []string, diffs map[string][2]bool) {
	t.Helper()
	for _, f := range features {
		c, u := ck.d.Enabled(f), up.d.Enabled(f)
		if want, ok := diffs[f]; ok {
			if c != want[0] || u != want[1] {
				t.Errorf("op %d (%s): %s deliberately differs: ctrlkit %t (want %t), component-base %t (want %t)", i, desc, f, c, want[0], u, want[1])
			}
			continue
		}
		if c != u {
			t.Errorf("op %d (%s): Enabled(%s): ctrlkit %t, component-base %t", i, desc, f, c, u)
		}
	}
	if c, u := ck.d.KnownFeatures(), up.d.KnownFeatures(); !sc.skipKnown && !slices.Equal(c, u) {
		t.Errorf("op %d (%s): KnownFeatures:\n ctrlkit:        %q\n component-base: %q", i, desc, c, u)
	}
	// Test overrides are not flag values in ctrlkit: String leaves them out while they
	// last (upstream's helper sets them with SetFromMap, so its String shows them).
	if !sc.skipString && len(ck.overrides) == 0 {
		if c, u := ck.d.String(), up.d.String(); c != u {
			t.Errorf("op %d (%s): String: ctrlkit %q, component-base %q", i, desc, c, u)
		}
	}
	if c, u := ck.d.EmulationVersion()+"/"+ck.d.MinCompatibilityVersion(), up.d.EmulationVersion()+"/"+up.d.MinCompatibilityVersion(); c != u {
		t.Errorf("op %d (%s): versions: ctrlkit %s, component-base %s", i, desc, c, u)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// ---- ops ----

func addVersioned(m map[string][]Spec) op {
	return op{desc: "AddVersioned " + strings.Join(sortedKeys(m), ","), registration: true, registers: sortedKeys(m),
		do: func(d driver, _ *side) string { return errText(d.AddVersioned(m)) }}
}

func add(m map[string]Spec) op {
	return op{desc: "Add " + strings.Join(sortedKeys(m), ","), registration: true, registers: sortedKeys(m),
		do: func(d driver, _ *side) string { return errText(d.Add(m)) }}
}

func addDependencies(m map[string][]string) op {
	return op{desc: "AddDependencies " + strings.Join(sortedKeys(m), ","), registration: true,
		do: func(d driver, _ *side) string {
			c := map[string][]string{} // upstream writes into the map it is given
			for k, v := range m {
				c[k] = slices.Clone(v)
			}
			return errText(d.AddDependencies(c))
		}}
}

func setEmulation(emu, minCompat string) op {
	return op{desc: "SetEmulation " + emu + " " + minCompat,
		do: func(d driver, _ *side) string { return errText(d.SetEmulation(emu, minCompat)) }}
}

func set(value string) op {
	return op{desc: "Set " + value, do: func(d driver, _ *side) string { return errText(d.Set(value)) }}
}

func setFromMap(m map[string]bool) op {
	return op{desc: "SetFromMap " + strings.Join(sortedKeys(m), ","),
		do: func(d driver, _ *side) string { return errText(d.SetFromMap(m)) }}
}

func overrideDefault(f string, v bool) op {
	return op{desc: "OverrideDefault " + f,
		do: func(d driver, _ *side) string { return errText(d.OverrideDefault(f, v)) }}
}

func overrideDefaultAt(f string, v bool, at string) op {
	return op{desc: "OverrideDefaultAtVersion " + f + " " + at,
		do: func(d driver, _ *side) string { return errText(d.OverrideDefaultAtVersion(f, v, at)) }}
}

func addFlag() op {
	return op{desc: "AddFlag", do: func(d driver, _ *side) string { d.AddFlag(); return "" }}
}

// override runs the test helper (featuregatetesting.SetManyDuringTest /
// SetFeatureGatesDuringTest) and answers its first failure, reduced to the gate's error
// (each helper words its prefix its own way), plus the dependents it disabled.
func override(values map[string]bool) op {
	return op{desc: "test override " + strings.Join(sortedKeys(values), ","),
		do: func(d driver, s *side) string {
			// Nested overrides run as nested subtests would: each name extends the last.
			rec, _ := d.Override("TestCompat/"+s.name+strings.Repeat("/x", len(s.overrides)+1), values)
			s.overrides = append(s.overrides, rec)
			// Upstream walks the dependencies in map order: compare the lines as a set.
			out := strings.Join(slices.Sorted(slices.Values(rec.logs)), "; ")
			if len(rec.failures) > 0 {
				out += " FAILED: " + gateError(rec.failures[0])
			}
			return out
		}}
}

// overrideVersions runs the versions test helper (SetVersionsDuringTest /
// SetFeatureGateVersionsDuringTest); endOverride ends it like a feature override.
func overrideVersions(emu, minCompat string) op {
	return op{desc: "test versions " + emu + " " + minCompat,
		do: func(d driver, s *side) string {
			rec, _ := d.OverrideVersions("TestCompat/"+s.name+strings.Repeat("/x", len(s.overrides)+1), emu, minCompat)
			s.overrides = append(s.overrides, rec)
			if len(rec.failures) > 0 {
				return "FAILED: " + gateError(rec.failures[0])
			}
			return ""
		}}
}

// gateError strips the helpers' own prefixes from a failure.
func gateError(msg string) string {
	if rest, ok := strings.CutPrefix(msg, "Failed to set feature gates: "); ok {
		return rest
	}
	for _, sep := range []string{") during test: ", "): "} { // upstream's, then ctrlkit's
		if strings.HasPrefix(msg, "failed to set versions") || strings.HasPrefix(msg, "featuregatetesting: cannot set versions") {
			if _, after, found := strings.Cut(msg, sep); found {
				return after
			}
		}
	}
	if rest, ok := strings.CutPrefix(msg, "featuregatetesting: cannot set "); ok {
		if _, after, found := strings.Cut(rest, ": "); found {
			return after
		}
	}
	return msg
}

// endOverride ends the innermost open test override (runs its cleanups).
func endOverride() op {
	return op{desc: "end test override", do: func(_ driver, s *side) string {
		if n := len(s.overrides); n > 0 {
			rec := s.overrides[n-1]
			s.overrides = s.overrides[:n-1]
			before := len(rec.failures)
			rec.end()
			if len(rec.failures) > before {
				return "restore FAILED: " + rec.failures[before]
			}
		}
		return ""
	}}
}

// failing marks o as expected to fail (true) or succeed (false) upstream.
func failing(o op, fails bool) op {
	o.fails = &fails
	return o
}

// converge says which deliberately different features agree again after o.
func converge(o op, features ...string) op {
	o.converges = features
	return o
}

// differs marks o as a deliberate difference with each side's own answer.
func differs(o op, reason, ctrlkitErr, upstreamErr string, enabled map[string][2]bool) op {
	o.deliberate, o.ctrlkitErr, o.upstreamErr, o.enabledDiff = reason, ctrlkitErr, upstreamErr, enabled
	return o
}
