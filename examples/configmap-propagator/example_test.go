package main

import (
	"fmt"
	"io"

	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
)

// Flags are checked before anything starts. Against a real cluster a taken target name is
// looked at again every 30s by default (the in-memory demo uses 1s unless the flag is set).
func Example_program() {
	var o options
	_, _ = demo.Parse(program(&o), []string{"--kubeconfig=/etc/kubernetes/admin.conf"}, io.Discard)
	fmt.Println(o.opts.SourceNamespace, o.opts.RetryTakenAfter)
	o = options{}
	_, _ = demo.Parse(program(&o), []string{"--kubeconfig=/etc/kubernetes/admin.conf", "--retry-taken-after=5s", "--source-namespace=platform"}, io.Discard)
	fmt.Println(o.opts.SourceNamespace, o.opts.RetryTakenAfter)
	_, err := demo.Parse(program(&options{}), []string{"--workers=0"}, io.Discard)
	fmt.Println(err)
	_, err = demo.Parse(program(&options{}), []string{"--source-namespace="}, io.Discard)
	fmt.Println(err)
	// Output:
	// ctrlkit-system 30s
	// platform 5s
	// --workers must be at least 1, got 0
	// --source-namespace must not be empty
}
