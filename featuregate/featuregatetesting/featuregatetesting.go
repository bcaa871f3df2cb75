package featuregatetesting

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

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
