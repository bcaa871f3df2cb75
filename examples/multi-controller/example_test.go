package main

import (
	"bytes"
	"fmt"
)

// Flags are checked before anything starts; a bad value is an error naming the flag.
func Example_parse() {
	_, err := parse([]string{"--feature-gates=PodCounter=maybe"}, &bytes.Buffer{})
	fmt.Println(err != nil)
	o, _ := parse([]string{"--feature-gates=PodCounter=true", "--workers=4"}, &bytes.Buffer{})
	fmt.Println(o.gate.Enabled(PodCounter), o.workers)
	o, _ = parse(nil, &bytes.Buffer{})
	fmt.Println(o.gate.Enabled(PodCounter), o.leaderElection.Enabled)
	// Output:
	// true
	// true 4
	// false true
}
