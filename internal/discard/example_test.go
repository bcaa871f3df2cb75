package discard_test

import (
	"errors"
	"fmt"

	"github.com/ctrlkit/ctrlkit/internal/discard"
)

// The logger drops errors as well as info lines, and is not the zero Logger.
func ExampleLogger() {
	l := discard.Logger()
	l.Error(errors.New("boom"), "dropped")
	l.Info("dropped too")
	fmt.Println(l.GetSink() != nil, l.Enabled())
	// Output: true false
}
