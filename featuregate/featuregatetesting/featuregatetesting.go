package featuregatetesting

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/ctrlkit/ctrlkit/featuregate"
	"github.com/ctrlkit/ctrlkit/featuregate/internal/override"
)

// owners records which test overrides which feature of which gate, to catch two parallel
// tests fighting over one feature (their restores would interleave wrongly).
var (
	ownersMu sync.Mutex
	owners   = map[ownerKey]string{}
)

type ownerKey struct {
	gate    *featuregate.Gate
	feature featuregate.Feature
}

// SetDuringTest sets feature f of gate to value until the end of the test (or subtest),
// then restores the exact previous state in t.Cleanup.
//
// It works on any gate, including one that was already read or frozen: it goes through a
// test-only override path that package featuregate keeps unexported. Overrides win over
// values set with Set and are not shown by (*Gate).String. Validation still applies: an
// unknown feature, a LockToDefault feature set to its other value, a feature PreAlpha at
// the gate's emulation version, or a state in which a feature is on while one it depends
// on is off fails the test.
//
// As in component-base's helper: AllAlpha/AllBeta override every alpha/beta feature
// (locked ones excepted), winning over values set with Set; and turning a feature off also
// turns off the features that depend on it (logged with t.Logf).
//
// Nested calls (a subtest overriding what its parent set) restore in reverse order. Two
// tests running in parallel must not override the same feature of the same gate; that
// fails the second one.
func SetDuringTest(t testing.TB, gate *featuregate.Gate, f featuregate.Feature, value bool) {
	t.Helper()
	SetManyDuringTest(t, gate, map[featuregate.Feature]bool{f: value})
}

// SetManyDuringTest is SetDuringTest for several features, applied at once: a feature
// and its dependency can be switched on together.
func SetManyDuringTest(t testing.TB, gate *featuregate.Gate, values map[featuregate.Feature]bool) {
	t.Helper()
	names := slices.Sorted(maps.Keys(values))
	var taken []ownership
	release := func() {
		for _, o := range slices.Backward(taken) {
			releaseOwner(o)
		}
	}
	ownersMu.Lock()
	for _, f := range names {
		key := ownerKey{gate, f}
		prevOwner, owned := owners[key]
		if owned && !sameTestOrSubtest(t.Name(), prevOwner) {
			ownersMu.Unlock()
			release()
			t.Fatalf("featuregatetesting: feature %s is already overridden by test %s, cannot override it in %s", f, prevOwner, t.Name())
			return
		}
		owners[key] = t.Name()
		taken = append(taken, ownership{key, prevOwner, owned})
	}
	ownersMu.Unlock()

	m := make(map[string]bool, len(values))
	for f, v := range values {
		m[string(f)] = v
	}
	restore, err := override.Set(gate, m, t.Logf)
	if err != nil {
		release()
		t.Fatalf("featuregatetesting: cannot set %s: %v", describe(names, values), err)
		return
	}
	t.Cleanup(func() {
		restore()
		release()
	})
}

// describe renders values as "A=true,B=false" in name order.
func describe(names []featuregate.Feature, values map[featuregate.Feature]bool) string {
	parts := make([]string, len(names))
	for i, f := range names {
		parts[i] = fmt.Sprintf("%s=%t", f, values[f])
	}
	return strings.Join(parts, ",")
}

type ownership struct {
	key       ownerKey
	prevOwner string
	owned     bool
}

func releaseOwner(o ownership) {
	ownersMu.Lock()
	defer ownersMu.Unlock()
	if o.owned {
		owners[o.key] = o.prevOwner
	} else {
		delete(owners, o.key)
	}
}

func sameTestOrSubtest(name, owner string) bool {
	return name == owner || strings.HasPrefix(name, owner+"/")
}

// SetEmulationVersionDuringTest makes gate emulate version v, with a min compatibility
// version one minor before it, until the end of the test, then restores the versions in
// t.Cleanup; it works on a read or frozen gate. See SetVersionsDuringTest.
func SetEmulationVersionDuringTest(t testing.TB, gate *featuregate.Gate, v *version.Version) {
	t.Helper()
	SetVersionsDuringTest(t, gate, v, defaultMinCompat(v))
}

// SetVersionsDuringTest sets the emulation and min compatibility versions of gate until
// the end of the test (as component-base's SetFeatureGateVersionsDuringTest), then
// restores the versions that were in force in t.Cleanup. Values already set must be valid
// at the new versions, or the test fails. Two tests running in parallel must not set
// different versions on the same gate; that fails the second one.
func SetVersionsDuringTest(t testing.TB, gate *featuregate.Gate, emu, minCompat *version.Version) {
	t.Helper()
	want := fmt.Sprintf("emu=%s,min=%s", emu, minCompat)
	ownersMu.Lock()
	prev, owned := versionOwners[gate]
	if owned && prev.value != want && !sameTestOrSubtest(t.Name(), prev.test) {
		ownersMu.Unlock()
		t.Fatalf("featuregatetesting: the versions of the gate are already set by test %s, cannot set them in %s", prev.test, t.Name())
		return
	}
	versionOwners[gate] = versionOwner{test: t.Name(), value: want}
	ownersMu.Unlock()
	release := func() {
		ownersMu.Lock()
		defer ownersMu.Unlock()
		if owned {
			versionOwners[gate] = prev
		} else {
			delete(versionOwners, gate)
		}
	}

	restore, err := override.SetVersions(gate, emu, minCompat)
	if err != nil {
		release()
		t.Fatalf("featuregatetesting: cannot set versions (emu=%s, min=%s): %v", emu, minCompat, err)
		return
	}
	t.Cleanup(func() {
		defer release()
		if err := restore(); err != nil {
			t.Fatalf("featuregatetesting: cannot restore the versions after the test: %v", err)
		}
	})
}

// versionOwner is the test that set a gate's versions, and to what.
type versionOwner struct {
	test, value string
}

// versionOwners records who set the versions of each gate (guarded by ownersMu).
var versionOwners = map[*featuregate.Gate]versionOwner{}

func defaultMinCompat(v *version.Version) *version.Version {
	if v == nil {
		return nil
	}
	return v.SubtractMinor(1)
}
