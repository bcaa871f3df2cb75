package clientgometrics_test

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ctrlkit/ctrlkit/internal/clientgometrics"
)

// A Manager hooks the collectors into client-go once per process and
// registers them into its own registry, which then gathers client-go's
// series.
func Example() {
	clientgometrics.Install()
	reg := prometheus.NewRegistry()
	if err := clientgometrics.Register(reg); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(clientgometrics.Hooked())
	// Output: true
}
