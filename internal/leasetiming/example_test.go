package leasetiming_test

import (
	"fmt"
	"time"

	"github.com/ctrlkit/ctrlkit/internal/leasetiming"
)

// A package copies its own fields into Timings, applies the defaults and
// wraps each Violation in its own error type.
func ExampleTimings_Validate() {
	t := leasetiming.Timings{LeaseDuration: 15 * time.Second, RenewDeadline: 14 * time.Second}.WithDefaults()
	for _, v := range t.Validate() {
		fmt.Println(v.Field+":", v.Rule)
	}
	// Output:
	// leaseDuration: leaseDuration 15s, stored in whole seconds as 15s, must be greater than renewDeadline 14s + retryPeriod 2s = 16s
}
