package sim_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/testkit/sim"
	"github.com/ctrlkit/ctrlkit/testkit/sim/internal/corpus"
)

// findWithin is how many seeds the checker may try to find each buggy version.
const findWithin = 200

// fixedSeeds is how many seeds each fixed version must pass: CTRLKIT_SIM_FIXED_SEEDS when set
// (1000 for the full check), else a count that keeps make test short.
func fixedSeeds() int {
	if n, err := strconv.Atoi(os.Getenv("CTRLKIT_SIM_FIXED_SEEDS")); err == nil && n > 0 {
		return n
	}
	return 100
}

// The known-bug corpus: each bug Sieve found in a real operator, ported as a small controller,
// is found by its fault within findWithin seeds, and its fixed version passes fixedSeeds seeds
// without an alarm.
func TestKnownBugCorpus(t *testing.T) {
	bugs := corpus.All()
	found, alarms, fixed := 0, 0, fixedSeeds()
	var lines []string
	for _, b := range bugs {
		t.Run(b.Name, func(t *testing.T) {
			start := time.Now()
			r := sim.Explore(t, b.Scenario(false), b.Fault, findWithin)
			took := time.Since(start)
			if r == nil {
				t.Errorf("%s (%s): not found within %d seeds of %s", b.Name, b.Origin, findWithin, b.Fault)
				lines = append(lines, fmt.Sprintf("  %-28s %-18s %-22s NOT FOUND in %d seeds", b.Name, b.Pattern, b.Fault, findWithin))
			} else {
				found++
				t.Logf("found with seed %d in %v: %s", r.Seed, took.Round(time.Millisecond), strings.Join(r.Problems, "; "))
				lines = append(lines, fmt.Sprintf("  %-28s %-18s %-22s found at seed %d (%v)", b.Name, b.Pattern, b.Fault, r.Seed, took.Round(time.Millisecond)))
			}
			if r := sim.Explore(t, b.Scenario(true), b.Fault, fixed); r != nil {
				alarms++
				t.Errorf("%s fixed: false alarm at seed %d:\n%s\ntrace:\n%s", b.Name, r.Seed, strings.Join(r.Problems, "\n"), strings.Join(r.Trace, "\n"))
			}
		})
	}
	t.Logf("known-bug corpus:\n%s", strings.Join(lines, "\n"))
	fmt.Printf("known-bug corpus: found %d of %d bugs, %d false alarms on %d fixed versions (%d seeds each)\n", found, len(bugs), alarms, len(bugs), fixed)
}
