package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	var opts options
	flag.StringVar(&opts.in, "in", "", "the CRD file controller-gen wrote (required)")
	flag.StringVar(&opts.out, "out", "", "the manifest to write, usually the package's crd.yaml (required)")
	flag.StringVar(&opts.conversionService, "conversion-service", "", "namespace/name of the Service serving the conversion webhook; empty: no spec.conversion")
	flag.StringVar(&opts.conversionPath, "conversion-path", "/convert", "the conversion webhook's path on that Service")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "crdmanifest: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	if err := run(opts); err != nil {
		fmt.Fprintln(os.Stderr, "crdmanifest:", err)
		os.Exit(1)
	}
}
