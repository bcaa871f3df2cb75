package informer

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
)

// BudgetFlags are the command-line flags of a factory's memory budget
// (WithMemoryBudget): --cache-memory-budget (a quantity such as 512Mi; empty,
// the default, sets none) and --cache-memory-budget-policy (warn,
// fail-readiness or degrade; default warn). Bind them with AddFlags, then
// pass Options to the factory.
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

// Options returns the factory options the flags ask for, or an error naming
// the flag whose value is wrong.
func (b *BudgetFlags) Options() ([]FactoryOption, error) {
	// The policy is checked even without a budget: a typo is an error, not
	// a value that waits to bite until a budget is set.
	name := b.Policy
	if name == "" { // not bound with AddFlags
		name = BudgetWarn.String()
	}
	policy, err := ParseBudgetPolicy(name)
	if err != nil {
		return nil, fmt.Errorf("--cache-memory-budget-policy: %w", err)
	}
	if b.Budget == "" {
		return nil, nil
	}
	q, err := resource.ParseQuantity(b.Budget)
	if err != nil {
		return nil, fmt.Errorf("--cache-memory-budget %q: %w", b.Budget, err)
	}
	n, ok := q.AsInt64()
	if !ok || n <= 0 {
		return nil, fmt.Errorf("--cache-memory-budget %q: want a positive number of bytes", b.Budget)
	}
	return []FactoryOption{WithMemoryBudget(n, policy)}, nil
}

// ParseBudgetPolicy parses a BudgetPolicy's String form.
func ParseBudgetPolicy(s string) (BudgetPolicy, error) {
	for _, p := range []BudgetPolicy{BudgetWarn, BudgetFailReadiness, BudgetDegrade} {
		if s == p.String() {
			return p, nil
		}
	}
	return 0, fmt.Errorf("unknown budget policy %q (want %s)", s, strings.Join([]string{BudgetWarn.String(), BudgetFailReadiness.String(), BudgetDegrade.String()}, ", "))
}
