package manager_test

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/manager"
)

// A bad option is an *OptionsError naming the field, matching
// ErrInvalidOptions.
func ExampleOptionsError() {
	_, err := manager.New(manager.Options{Client: fake.NewClientset(), CacheSyncTimeout: -time.Second})
	var oe *manager.OptionsError
	if errors.As(err, &oe) {
		fmt.Println(oe.Field, errors.Is(err, manager.ErrInvalidOptions))
	}
	fmt.Println(err)
	// Output:
	// manager.Options.CacheSyncTimeout true
	// invalid manager.Options.CacheSyncTimeout: -1s is negative
}
