package featuregatetesting

import (
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
// unknown feature, a LockToDefault feature set to its other value, or a feature PreAlpha at
// the gate's emulation version fails the test.
//
// Nested calls (a subtest overriding what its parent set) restore in reverse order. Two
// tests running in parallel must not override the same feature of the same gate; that
// fails the second one.
func SetDuringTest(t testing.TB, gate *featuregate.Gate, f featuregate.Feature, value bool) {
	t.Helper()
	key := ownerKey{gate, f}
	ownersMu.Lock()
	prevOwner, owned := owners[key]
	if owned && !sameTestOrSubtest(t.Name(), prevOwner) {
		ownersMu.Unlock()
		t.Fatalf("featuregatetesting: feature %s is already overridden by test %s, cannot override it in %s", f, prevOwner, t.Name())
		return
	}
	owners[key] = t.Name()
	ownersMu.Unlock()

	restore, err := override.Set(gate, string(f), value)
	if err != nil {
		releaseOwner(key, prevOwner, owned)
		t.Fatalf("featuregatetesting: cannot set %s=%t: %v", f, value, err)
		return
	}
	t.Cleanup(func() {
		restore()
		releaseOwner(key, prevOwner, owned)
	})
}

// SetManyDuringTest is SetDuringTest for several features, applied in name order.
func SetManyDuringTest(t testing.TB, gate *featuregate.Gate, values map[featuregate.Feature]bool) {
	t.Helper()
	for _, f := range slices.Sorted(maps.Keys(values)) {
		SetDuringTest(t, gate, f, values[f])
	}
}

func releaseOwner(key ownerKey, prevOwner string, owned bool) {
	ownersMu.Lock()
	defer ownersMu.Unlock()
	if owned {
		owners[key] = prevOwner
	} else {
		delete(owners, key)
	}
}

func sameTestOrSubtest(name, owner string) bool {
	return name == owner || strings.HasPrefix(name, owner+"/")
}
