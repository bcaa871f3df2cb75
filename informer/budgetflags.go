package informer

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
)

// BudgetFlags are the command-line flags of a factory's memory budget
// (Options.MemoryBudget and BudgetPolicy): --cache-memory-budget (a quantity
// such as 512Mi; empty, the default, sets none) and
// --cache-memory-budget-policy (warn, fail-readiness or degrade; default
// warn). Bind them with AddFlags, then Apply them to the factory's Options.
type BudgetFlags struct {
	Budget string
	Policy string
}

// AddFlags binds the flags to fs.
func (b *BudgetFlags) AddFlags(fs *pflag.FlagSet) {
	if b.Policy == "" {
		b.Policy = BudgetWarn.String()
	}
	fs.StringVar(&b.Budget, "cache-memory-budget", b.Budget, "memory the informer caches may hold together, "+
		"as estimated (ctrlkit_informer_bytes), such as 512Mi; empty: no budget")
	fs.StringVar(&b.Policy, "cache-memory-budget-policy", b.Policy, "what happens over --cache-memory-budget: "+
		"warn (log), fail-readiness (also fail /readyz) or degrade (also cache the degradable informers' metadata only)")
}

// Apply sets the budget the flags ask for in o (MemoryBudget and
// BudgetPolicy; without --cache-memory-budget it changes nothing), or
// returns an error naming the flag whose value is wrong, leaving o as it
// was. A nil o only validates the flags.
func (b *BudgetFlags) Apply(o *Options) error {
	// The policy is checked even without a budget: a typo is an error, not
	// a value that waits to bite until a budget is set.
	name := b.Policy
	if name == "" { // not bound with AddFlags
		name = BudgetWarn.String()
	}
	policy, err := parseBudgetPolicy(name)
	if err != nil {
		return fmt.Errorf("--cache-memory-budget-policy: %w", err)
	}
	if b.Budget == "" {
		return nil
	}
	q, err := resource.ParseQuantity(b.Budget)
	if err != nil {
		return fmt.Errorf("--cache-memory-budget %q: %w", b.Budget, err)
	}
	n, ok := q.AsInt64()
	if !ok || n <= 0 {
		return fmt.Errorf("--cache-memory-budget %q: want a positive number of bytes", b.Budget)
	}
	if o != nil {
		o.MemoryBudget, o.BudgetPolicy = n, policy
	}
	return nil
}

// parseBudgetPolicy parses a BudgetPolicy's String form.
func parseBudgetPolicy(s string) (BudgetPolicy, error) {
	for _, p := range []BudgetPolicy{BudgetWarn, BudgetFailReadiness, BudgetDegrade} {
		if s == p.String() {
			return p, nil
		}
	}
	return 0, fmt.Errorf("unknown budget policy %q (want %s)", s, strings.Join([]string{BudgetWarn.String(), BudgetFailReadiness.String(), BudgetDegrade.String()}, ", "))
}
