// Command crdmanifest turns the CRD file controller-gen writes (<group>_<plural>.yaml) into
// the crd.yaml an API package embeds: one YAML document under a header saying how it was
// made, with a conversion webhook in spec.conversion when -conversion-service is given
// (controller-gen has no marker for one; kubebuilder projects add it with a kustomize patch).
// It removes the input file, so that only crd.yaml is left to commit.
//
// Run it from go generate after controller-gen, with absolute paths ($PWD is the package's
// directory there), because go -C runs it from this module's directory:
//
//	//go:generate go -C ../../../../hack/tools run ./crdmanifest -in $PWD/examples.ctrlkit.dev_webapps.yaml -out $PWD/crd.yaml
//
// The output keeps controller-gen's formatting (keys sorted, the same YAML encoder), so
// regenerating an unchanged package changes nothing.
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
