package netfault_test

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/ctrlkit/ctrlkit/internal/netfault"
)

// A write the server applied whose reply is lost: the client sees a timeout.
func ExampleReply() {
	applied := false
	noDelay := func() time.Duration { return 0 }
	_, lost, err := netfault.Reply(context.Background(), noDelay, true, func() (string, error) {
		applied = true
		return "ok", nil
	})
	fmt.Println(applied, lost, apierrors.IsTimeout(err))
	// Output: true true true
}
