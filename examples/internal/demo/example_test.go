package demo_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
)

// With neither --kubeconfig nor $KUBECONFIG, an example runs on the in-memory cluster.
func ExampleKubeconfig() {
	_ = os.Unsetenv(demo.EnvKubeconfig)
	fmt.Printf("%q\n", demo.Kubeconfig(""))
	fmt.Println(demo.Kubeconfig("/etc/kube/admin.conf"))
	// Output:
	// ""
	// /etc/kube/admin.conf
}

// Await polls a condition until it holds or the deadline passes.
func ExampleAwait() {
	ready := 0
	err := demo.Await(context.Background(), 5*time.Second, "three pods ready", func(context.Context) (bool, error) {
		ready++
		return ready >= 3, nil
	})
	fmt.Println(err, ready)
	// Output: <nil> 3
}
