package informer_test

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/ctrlkit/ctrlkit/informer"
)

// A binary's memory budget from its command line.
func ExampleBudgetFlags() {
	for _, args := range [][]string{
		{},
		{"--cache-memory-budget=512Mi", "--cache-memory-budget-policy=fail-readiness"},
		{"--cache-memory-budget=lots"},
		{"--cache-memory-budget=1Gi", "--cache-memory-budget-policy=panic"},
	} {
		var budget informer.BudgetFlags
		fs := pflag.NewFlagSet("controller", pflag.ContinueOnError)
		budget.AddFlags(fs)
		if err := fs.Parse(args); err != nil {
			fmt.Println(err)
			continue
		}
		var opts informer.Options
		err := budget.Apply(&opts)
		fmt.Println(opts.MemoryBudget, opts.BudgetPolicy, err)
	}
	// Output:
	// 0 BudgetPolicy(0) <nil>
	// 536870912 fail-readiness <nil>
	// 0 BudgetPolicy(0) --cache-memory-budget "lots": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'
	// 0 BudgetPolicy(0) --cache-memory-budget-policy: unknown budget policy "panic" (want warn, fail-readiness, degrade)
}
