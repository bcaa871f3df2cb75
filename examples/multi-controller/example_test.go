package main

import (
	"fmt"
	"io"

	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
)

// Flags are checked before anything starts; a bad value is an error naming the flag.
func Example_program() {
	_, err := demo.Parse(program(&options{}), []string{"--feature-gates=PodCounter=maybe"}, io.Discard)
	fmt.Println(err != nil)
	s, _ := demo.Parse(program(&options{}), []string{"--feature-gates=PodCounter=true", "--workers=4"}, io.Discard)
	fmt.Println(s.Gate.Enabled(PodCounter), s.Workers)
	s, _ = demo.Parse(program(&options{}), nil, io.Discard)
	fmt.Println(s.Gate.Enabled(PodCounter), s.LeaderElection.Enabled)
	// Output:
	// true
	// true 4
	// false true
}
