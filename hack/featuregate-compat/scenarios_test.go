package compat

import "testing"

// The features most scenarios register: one of each kind, and two versioned histories.
var (
	base = add(map[string]Spec{
		"AlphaOff": {Stage: "ALPHA"},
		"AlphaOn":  {Stage: "ALPHA", Default: true},
		"BetaOn":   {Stage: "BETA", Default: true},
		"BetaOff":  {Stage: "BETA"},
		"GALocked": {Stage: "", Default: true, Locked: true},
		"GAOpen":   {Stage: "", Default: true},
		"Dep":      {Stage: "DEPRECATED"},
	})
	versioned = addVersioned(map[string][]Spec{
		// alpha at 1.30, beta and on at 1.32, GA and locked at 1.34.
		"Later": {
			{Version: "1.30", Stage: "ALPHA"},
			{Version: "1.32", Stage: "BETA", Default: true},
			{Version: "1.34", Stage: "", Default: true, Locked: true},
		},
		// beta at 1.35, on by default only once the min compatibility version is 1.35.
		"Skew": {
			{Version: "1.33", Stage: "ALPHA"},
			{Version: "1.35", Stage: "BETA"},
			{Version: "1.35", Stage: "BETA", Default: true, MinCompat: "1.35"},
			{Version: "1.37", Stage: "", Default: true, Locked: true},
		},
	})
	dependent = add(map[string]Spec{
		"Base":   {Stage: "BETA", Default: true},
		"Child":  {Stage: "BETA", Default: true},
		"Alpha1": {Stage: "ALPHA"},
		"Alpha2": {Stage: "ALPHA"},
	})
	dependencies = addDependencies(map[string][]string{"Child": {"Base"}, "Alpha2": {"Alpha1", "Base"}})
)

func TestSetAndEmulation(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "values, spaces, GA and deprecated, versions", emu: "1.31", ops: []op{
			base, versioned,
			set("AlphaOff=true, BetaOn = false,,"),
			set("Later=true"),
			setFromMap(map[string]bool{"GAOpen": false, "Dep": true}),
			setEmulation("1.33", ""),
			set("Later=false"),
			setEmulation("1.35", "1.35"),
			setEmulation("1.36", ""),
			// Later=false is locked away at 1.34: the versions cannot move there.
			setEmulation("1.36", "1.34"),
		}},
		{name: "missing value", emu: "1.31", ops: []op{base, set("AlphaOff=true"), set("BetaOn")}},
		{name: "invalid value", emu: "1.31", ops: []op{base, set("AlphaOff=maybe")}},
		{name: "unknown feature", emu: "1.31", ops: []op{base, set("AlphaOff=true"), set("Nope=true")}},
		{name: "locked", emu: "1.31", ops: []op{base, set("GALocked=true"), set("GALocked=false")}},
		{name: "PreAlpha (issue 22, 3: with the min compatibility version)", emu: "1.29", ops: []op{
			base, versioned, set("Later=true"),
		}},
		{name: "PreAlpha at a set min compatibility version", emu: "1.31", ops: []op{
			base, versioned, setEmulation("1.29", "1.20"), setFromMap(map[string]bool{"Later": false}),
		}},
		{name: "a value becomes PreAlpha when the emulation version moves back", emu: "1.31", ops: []op{
			base, versioned, set("Later=true"), setEmulation("1.29", ""),
		}},
		{name: "min compatibility picks the spec", emu: "1.35", ops: []op{
			versioned,
			setEmulation("1.35", "1.35"),
			setEmulation("1.36", ""),
			setEmulation("1.36", "1.34"),
			setEmulation("1.37", "1.34"),
			setEmulation("1.37", ""),
			setEmulation("1.34", ""),
			set("Skew=true"),
			setEmulation("1.35", "1.34"),
		}},
		{name: "AllAlpha and AllBeta: explicit values win, whatever the order", emu: "1.31", skipString: true, ops: []op{
			base, versioned,
			set("AllAlpha=true,AlphaOff=false"),
			set("AllBeta=false"),
			set("BetaOn=true"),
			setEmulation("1.33", ""),
			differs(set("AlphaOn=false,AllAlpha=false"), allAlphaTwice, "", "", map[string][2]bool{"Skew": {false, true}}),
			// Upstream recomputes its values from the flags when the versions change.
			converge(setEmulation("1.34", ""), "Skew"),
		}},
	})
}

// The reasons of the deliberate differences, as the featuregate package doc gives them.
const (
	allAlphaTwice = "AllAlpha=true then AllAlpha=false: ctrlkit resolves from the values set, upstream keeps what the first AllAlpha set until the versions change"
	lockedBeta    = "AllBeta (and AllAlpha) leave features locked to their default alone in ctrlkit; upstream flips them"
	poisoned      = "a failed Set leaves ctrlkit unchanged; upstream keeps the bad entry and fails every later Set"
	emptyName     = "an entry without a name is reported as such by ctrlkit; upstream looks up the empty name"
	addVersion    = "Add honours FeatureSpec.Version in ctrlkit; upstream resets it to 0.0"
	emptyHistory  = "ctrlkit rejects an empty history; upstream registers a feature that is PreAlpha forever"
	lockedAlpha   = "a test override of AllAlpha/AllBeta leaves locked features alone in ctrlkit; upstream's helper tries to set them and fails"
	exactRestore  = "the end of a test override restores the exact state in ctrlkit; upstream's helper resets a feature nobody named to its default, dropping what AllAlpha/AllBeta gave it"
	overrideWins  = "a test override wins over a later Set in ctrlkit; upstream's helper stores it as a Set value, so a later Set replaces it"
)

func TestDeliberateDifferences(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "AllAlpha twice", emu: "1.31", skipString: true, ops: []op{
			base,
			set("AllAlpha=true"),
			differs(set("AllAlpha=false"), allAlphaTwice, "", "", map[string][2]bool{"AlphaOff": {false, true}, "AlphaOn": {false, true}}),
			converge(setEmulation("1.32", ""), "AlphaOff", "AlphaOn"),
		}},
		{name: "AllBeta and a locked beta feature", emu: "1.31", skipString: true, ops: []op{
			base, add(map[string]Spec{"BetaLocked": {Stage: "BETA", Locked: true}}),
			differs(set("AllBeta=true"), lockedBeta, "", "", map[string][2]bool{"BetaLocked": {false, true}}),
		}},
		{name: "a failed Set poisons upstream", emu: "1.31", skipString: true, ops: []op{
			base,
			set("Nope=true"),
			differs(set("AlphaOff=true"), poisoned, "", "unrecognized feature gate: Nope", map[string][2]bool{"AlphaOff": {true, false}}),
		}},
		{name: "an entry without a name", emu: "1.31", ops: []op{
			base, differs(set("=true"), emptyName, `missing feature name in "=true"`, "unrecognized feature gate: ", nil),
		}},
		{name: "Add with a version", emu: "1.31", skipKnown: true, ops: []op{
			differs(add(map[string]Spec{"Future": {Version: "1.40", Stage: "BETA", Default: true}}), addVersion, "", "", map[string][2]bool{"Future": {false, true}}),
			set(""),
		}},
		{name: "an empty history", emu: "1.31", ops: []op{
			differs(addVersioned(map[string][]Spec{"Empty": {}}), emptyHistory, `feature "Empty" has an empty history`, "", nil),
			set(""),
		}},
		{name: "AllAlpha test override and a locked alpha feature", emu: "1.31", skipString: true, ops: []op{
			base, add(map[string]Spec{"AlphaLocked": {Stage: "ALPHA", Locked: true}}),
			differs(override(map[string]bool{"AllAlpha": true}), lockedAlpha, "",
				" FAILED: cannot set feature gate AlphaLocked to true, feature is locked to false",
				map[string][2]bool{"AlphaOff": {true, false}, "AllAlpha": {true, false}}),
			converge(endOverride(), "AlphaOff", "AllAlpha"),
		}},
		{name: "the end of an override after AllAlpha was set", emu: "1.31", skipString: true, ops: []op{
			base,
			set("AllAlpha=false"),
			override(map[string]bool{"AlphaOn": true}),
			differs(endOverride(), exactRestore, "", "", map[string][2]bool{"AlphaOn": {false, true}}),
		}},
		{name: "a Set while an override lasts", emu: "1.31", skipString: true, ops: []op{
			base,
			override(map[string]bool{"AlphaOff": true}),
			differs(set("AlphaOff=false"), overrideWins, "", "", map[string][2]bool{"AlphaOff": {true, false}}),
			converge(endOverride(), "AlphaOff"),
		}},
	})
}

func TestAddVersioned(t *testing.T) {
	bad := map[string][]Spec{
		"issue 22, 2: introduced as deprecated":   {{Version: "1.29", Stage: "DEPRECATED"}},
		"no version":                              {{Stage: "ALPHA"}},
		"patch version":                           {{Version: "1.30.1", Stage: "ALPHA"}},
		"decreasing":                              {{Version: "1.32", Stage: "ALPHA"}, {Version: "1.30", Stage: "BETA"}},
		"duplicate":                               {{Version: "1.30", Stage: "ALPHA"}, {Version: "1.30", Stage: "BETA"}},
		"no change":                               {{Version: "1.30", Stage: "BETA"}, {Version: "1.31", Stage: "BETA"}},
		"unlock":                                  {{Version: "1.30", Stage: "", Default: true, Locked: true}, {Version: "1.31", Stage: "DEPRECATED", Default: true}},
		"resurrect":                               {{Version: "1.0", Stage: ""}, {Version: "1.30", Stage: "DEPRECATED"}, {Version: "1.31", Stage: ""}},
		"beta to alpha":                           {{Version: "1.30", Stage: "BETA"}, {Version: "1.31", Stage: "ALPHA"}},
		"GA to beta":                              {{Version: "1.30", Stage: ""}, {Version: "1.31", Stage: "BETA"}},
		"min compat first":                        {{Version: "1.30", Stage: "BETA", MinCompat: "1.30"}},
		"min compat other version":                {{Version: "1.30", Stage: "BETA"}, {Version: "1.31", Stage: "BETA", Default: true, MinCompat: "1.31"}},
		"min compat patch":                        {{Version: "1.30", Stage: "BETA"}, {Version: "1.30", Stage: "BETA", Default: true, MinCompat: "1.29.1"}},
		"min compat after version":                {{Version: "1.30", Stage: "BETA"}, {Version: "1.30", Stage: "BETA", Default: true, MinCompat: "1.31"}},
		"same version other stage":                {{Version: "1.30", Stage: "ALPHA"}, {Version: "1.30", Stage: "BETA", MinCompat: "1.30"}},
		"same version other lock":                 {{Version: "1.30", Stage: "BETA"}, {Version: "1.30", Stage: "BETA", Locked: true, MinCompat: "1.30"}},
		"same version and min compat":             {{Version: "1.30", Stage: "BETA"}, {Version: "1.30", Stage: "BETA", Default: true, MinCompat: "1.29"}, {Version: "1.30", Stage: "BETA", MinCompat: "1.29"}},
		"min compat decreasing":                   {{Version: "1.30", Stage: "BETA"}, {Version: "1.30", Stage: "BETA", Default: true, MinCompat: "1.30"}, {Version: "1.31", Stage: "", Default: true}, {Version: "1.31", Stage: "", Default: true, Locked: true, MinCompat: "1.29"}},
		"deprecated at x.0 is fine":               {{Version: "2.0", Stage: "DEPRECATED"}},
		"same version, new default, min compat":   {{Version: "1.30", Stage: "BETA"}, {Version: "1.30", Stage: "BETA", Default: true, MinCompat: "1.30"}},
		"alpha to deprecated then locked":         {{Version: "1.0", Stage: "ALPHA"}, {Version: "1.20", Stage: "DEPRECATED"}, {Version: "1.22", Stage: "DEPRECATED", Locked: true}},
		"same version after inherited min compat": {{Version: "1.30", Stage: "BETA"}, {Version: "1.30", Stage: "BETA", Default: true, MinCompat: "1.30"}, {Version: "1.30", Stage: "BETA"}},
	}
	fine := map[string]bool{
		"deprecated at x.0 is fine": true, "same version, new default, min compat": true, "alpha to deprecated then locked": true,
		"same version after inherited min compat": true,
	}
	var scenarios []scenario
	for name, specs := range bad {
		scenarios = append(scenarios, scenario{name: name, emu: "1.31", ops: []op{
			failing(addVersioned(map[string][]Spec{"F": specs}), !fine[name]),
			set(""),
		}})
	}
	scenarios = append(scenarios,
		scenario{name: "re-adding the same history is fine, another one conflicts", emu: "1.31", ops: []op{
			versioned, versioned,
			addVersioned(map[string][]Spec{"Later": {{Version: "1.30", Stage: "ALPHA"}}}),
			add(map[string]Spec{"Later": {Stage: "ALPHA"}}),
		}},
		scenario{name: "registration after the flag", emu: "1.31", ops: []op{
			base, addFlag(), add(map[string]Spec{"New": {Stage: "ALPHA"}}),
			addVersioned(map[string][]Spec{"New": {{Version: "1.30", Stage: "ALPHA"}}}),
			addDependencies(map[string][]string{"AlphaOn": {"AlphaOff"}}),
		}},
	)
	runScenarios(t, scenarios)
}

func TestDependencies(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "a dependency cannot be turned off under a feature that is on", emu: "1.31", ops: []op{
			dependent, dependencies, set("Alpha1=true"), set("Base=false"),
		}},
		{name: "both off together", emu: "1.31", ops: []op{
			dependent, dependencies, set("Base=false,Child=false"), set("Alpha2=true"),
		}},
		{name: "on together, then AllBeta", emu: "1.31", skipString: true, ops: []op{
			dependent, dependencies, set("Alpha1=true,Alpha2=true"), set("AllAlpha=false"), set("AllBeta=false"),
		}},
		{name: "merged with earlier dependencies", emu: "1.31", ops: []op{
			dependent, dependencies, addDependencies(map[string][]string{"Alpha2": {"Alpha1"}, "Alpha1": {"Base"}}),
			set("Alpha1=true"), set("Base=false,Child=false"),
		}},
	})

	specs := add(map[string]Spec{
		"A": {Stage: "ALPHA"}, "A2": {Stage: "ALPHA"}, "AOn": {Stage: "ALPHA", Default: true},
		"B": {Stage: "BETA"}, "G": {Stage: "", Default: true}, "GL": {Stage: "", Default: true, Locked: true},
		"D": {Stage: "DEPRECATED"}, "DL": {Stage: "DEPRECATED", Locked: true},
	})
	history := addVersioned(map[string][]Spec{
		"V": {{Version: "1.30", Stage: "ALPHA"}, {Version: "1.32", Stage: "BETA", Default: true}},
		"W": {{Version: "1.30", Stage: "ALPHA"}, {Version: "1.33", Stage: "BETA", Default: true}},
		"X": {{Version: "1.31", Stage: "ALPHA"}},
		"Y": {{Version: "1.30", Stage: "ALPHA"}},
	})
	var scenarios []scenario
	for name, deps := range map[string]map[string][]string{
		"unknown feature":            {"Nope": {"A"}},
		"unknown dependency":         {"A": {"Nope"}},
		"beta on alpha":              {"B": {"A"}},
		"GA on beta":                 {"G": {"B"}},
		"beta on deprecated":         {"B": {"D"}},
		"deprecated on deprecated":   {"D": {"DL"}},
		"default on, dependency off": {"AOn": {"A"}},
		"locked on unlocked":         {"GL": {"G"}},
		"self cycle":                 {"A": {"A"}},
		"alpha on PreAlpha is fine":  {"Y": {"X"}},
		"every version is checked":   {"V": {"W"}},
		"fine":                       {"A": {"A2"}, "B": {"G"}, "G": {"GL"}},
	} {
		ok := name == "fine" || name == "alpha on PreAlpha is fine" || name == "deprecated on deprecated"
		scenarios = append(scenarios, scenario{name: name, emu: "1.31", ops: []op{specs, history, failing(addDependencies(deps), !ok), set("")}})
	}
	runScenarios(t, scenarios)
}

func TestOverrideDefault(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "defaults change, values set still win", emu: "1.32", ops: []op{
			base, versioned,
			overrideDefault("BetaOn", false),
			overrideDefault("AlphaOff", true),
			overrideDefault("GAOpen", false),
			overrideDefault("Later", false),
			set("BetaOn=true"),
			overrideDefaultAt("Later", true, "1.31"),
			setEmulation("1.31", ""),
			overrideDefault("Nope", true),
			overrideDefault("GALocked", false),
			overrideDefaultAt("Later", false, "1.35"),
			overrideDefaultAt("Later", true, "1.29"),
			setEmulation("1.29", ""),
			overrideDefault("Later", true),
			addFlag(),
			overrideDefault("AlphaOff", false),
		}},
		{name: "min compatibility decides which entry changes", emu: "1.35", ops: []op{
			versioned,
			overrideDefault("Skew", true),
			setEmulation("1.35", "1.35"),
			overrideDefault("Skew", false),
			setEmulation("1.35", ""),
		}},
		{name: "dependencies are checked by the next Set", emu: "1.31", ops: []op{
			dependent, dependencies, overrideDefault("Base", false), set(""),
		}},
	})
}

func TestTestOverrides(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "issue 22, 1: AllAlpha wins over Set", emu: "1.31", skipString: true, ops: []op{
			base, versioned,
			set("AlphaOff=false,AlphaOn=false"),
			override(map[string]bool{"AllAlpha": true}),
			endOverride(),
			override(map[string]bool{"AllAlpha": true, "AllBeta": false, "AlphaOn": false}),
		}},
		{name: "nested overrides restore in reverse", emu: "1.31", ops: []op{
			base, versioned,
			set("BetaOff=true"),
			override(map[string]bool{"BetaOff": false, "AlphaOff": true}),
			override(map[string]bool{"BetaOff": true}),
			endOverride(),
			endOverride(),
		}},
		{name: "turning a dependency off turns off its dependents", emu: "1.31", ops: []op{
			dependent, dependencies,
			override(map[string]bool{"Base": false}),
			endOverride(),
			override(map[string]bool{"Base": false, "Child": true}),
		}},
		{name: "a dependent cannot be on alone", emu: "1.31", ops: []op{
			dependent, dependencies,
			override(map[string]bool{"Alpha2": true}),
		}},
		{name: "together is fine", emu: "1.31", ops: []op{
			dependent, dependencies,
			override(map[string]bool{"Alpha2": true, "Alpha1": true}),
		}},
		{name: "locked", emu: "1.31", ops: []op{
			base, override(map[string]bool{"GALocked": false}),
		}},
		{name: "versions for the length of a test", emu: "1.30", ops: []op{
			base, versioned,
			set("BetaOff=true"),
			overrideVersions("1.33", "1.32"),
			override(map[string]bool{"Later": false}),
			endOverride(),
			overrideVersions("1.35", "1.35"),
			endOverride(),
			endOverride(),
		}},
		{name: "versions at which a value set is invalid", emu: "1.31", ops: []op{
			base, versioned,
			set("Later=true"),
			failing(overrideVersions("1.29", "1.28"), true),
		}},
		{name: "PreAlpha", emu: "1.29", ops: []op{
			base, versioned, override(map[string]bool{"Later": true}),
		}},
	})
}
