package featuregate_test

import (
	"testing"

	"github.com/ctrlkit/ctrlkit/featuregate"
)

func fuzzGate(t testing.TB) *featuregate.Gate {
	return newTestGate(t, featuregate.WithLogger(discard()), featuregate.WithEmulationVersion(v(1, 31)))
}

// FuzzSet checks that Set never panics, that a rejected value leaves the gate unchanged,
// and that an accepted one round-trips: value -> state -> String() -> Set on a fresh gate
// -> the same state.
func FuzzSet(f *testing.F) {
	for _, seed := range []string{
		"", ",", " , ", "AlphaOff=true", "AlphaOff=true,BetaOn=false", " AlphaOff = 1 ,, BetaOn=F ",
		"AllAlpha=true,AlphaOff=false", "AlphaOff=false,AllAlpha=true", "AllBeta=false,BetaOn=true",
		"GALocked=true", "GALocked=false", "LaterFeature=true", "Deprecated=true,GAOpen=false",
		"AlphaOff", "=true", "AlphaOff=maybe", "Nope=true", "AlphaOff=true,AlphaOff=false",
		"AlphaOff==true", "AlphaOff=true=false", "\x00=1", "AlphaOff=\ttrue\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		g := fuzzGate(t)
		require := func(ok bool, format string, args ...any) {
			t.Helper()
			if !ok {
				t.Fatalf(format, args...)
			}
		}
		// A prior state, so "unchanged" is tested against something non-trivial.
		if err := g.Set("BetaOff=true"); err != nil {
			t.Fatal(err)
		}
		beforeString, before := g.String(), state(g)

		if err := g.Set(value); err != nil {
			require(g.String() == beforeString, "failed Set %q changed String: %q -> %q (%v)", value, beforeString, g.String(), err)
			require(mapsEqual(state(g), before), "failed Set %q changed state (%v)", value, err)
			require(err.Error() != "", "empty error message")
			return
		}
		rendered, after := g.String(), state(g)

		fresh := fuzzGate(t)
		if err := fresh.Set(rendered); err != nil {
			t.Fatalf("re-rendered %q (from %q) rejected: %v", rendered, value, err)
		}
		require(fresh.String() == rendered, "round trip of %q: %q != %q", value, fresh.String(), rendered)
		require(mapsEqual(state(fresh), after), "round trip of %q via %q gives another state", value, rendered)

		// Applying the rendering again is idempotent.
		if err := g.Set(rendered); err != nil {
			t.Fatalf("re-applying %q: %v", rendered, err)
		}
		require(g.String() == rendered && mapsEqual(state(g), after), "re-applying %q changed the gate", rendered)
	})
}

func mapsEqual(a, b map[featuregate.Feature]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
