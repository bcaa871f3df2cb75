package main

import (
	"bytes"
	"fmt"
)

// Flags are checked before anything starts. Against a real cluster a taken target name is
// looked at again every 30s by default (the in-memory demo uses 1s unless the flag is set).
func Example_parse() {
	o, _ := parse([]string{"--kubeconfig=/etc/kubernetes/admin.conf"}, &bytes.Buffer{})
	fmt.Println(o.opts.SourceNamespace, o.opts.RetryTakenAfter)
	o, _ = parse([]string{"--kubeconfig=/etc/kubernetes/admin.conf", "--retry-taken-after=5s", "--source-namespace=platform"}, &bytes.Buffer{})
	fmt.Println(o.opts.SourceNamespace, o.opts.RetryTakenAfter)
	_, err := parse([]string{"--workers=0"}, &bytes.Buffer{})
	fmt.Println(err)
	// Output:
	// ctrlkit-system 30s
	// platform 5s
	// --workers must be at least 1, got 0
}
