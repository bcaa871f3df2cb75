package controller_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ctrlkit/ctrlkit/controller"
)

func ExampleParseKey() {
	k, err := controller.ParseKey("kube-system/coredns")
	fmt.Println(k.Namespace, k.Name, err)
	k, _ = controller.ParseKey("node-1")
	fmt.Printf("%q %q\n", k.Namespace, k.String())
	_, err = controller.ParseKey("a/b/c")
	fmt.Println(errors.Is(err, controller.ErrInvalidKey))
	// Output:
	// kube-system coredns <nil>
	// "" "node-1"
	// true
}

func ExampleTerminal() {
	err := fmt.Errorf("reconciling default/web: %w", controller.Terminal(errors.New("spec.replicas is negative")))
	fmt.Println(controller.IsTerminal(err))
	fmt.Println(err)
	// Output:
	// true
	// reconciling default/web: terminal: spec.replicas is negative
}

// A controller run on its own: the Reconciler fails twice, then succeeds; the
// loop retries with backoff in between.
func ExampleNew() {
	done := make(chan struct{})
	attempts := 0
	r := controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
		attempts++
		if attempts < 3 {
			return controller.Result{}, fmt.Errorf("attempt %d: API server busy", attempts)
		}
		fmt.Printf("reconciled %s after %d attempts\n", key, attempts)
		close(done)
		return controller.Result{}, nil
	})
	c, err := controller.New("example", r, controller.Options[controller.Key]{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- c.Run(ctx) }()

	c.Enqueue(controller.Key{Namespace: "default", Name: "web"})
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
	cancel()
	fmt.Println("run returned:", <-stopped)
	// Output:
	// reconciled default/web after 3 attempts
	// run returned: <nil>
}

func ExampleNew_invalidOptions() {
	_, err := controller.New("bad", controller.ReconcilerFunc[string](nil), controller.Options[string]{Workers: -2})
	fmt.Println(err)
	fmt.Println(errors.Is(err, controller.ErrInvalidOptions))
	// Output:
	// controller "bad": invalid Workers: -2 is negative
	// true
}
