// Package flagtest runs an example binary with malformed flag values: each must exit 2 before
// anything starts, with a message naming the flag. Common lists the values every binary shares
// (manager.Flags and the demo's); each binary adds its own.
package flagtest

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctrlkit/ctrlkit/certwatcher"
)

// Case is one malformed command line and the flag its message must name.
type Case struct {
	Args []string
	Flag string
}

// Common are the malformed values of the flags every example binary has.
func Common() []Case {
	return []Case{
		{[]string{"--kube-api-qps=NaN"}, "--kube-api-qps"},
		{[]string{"--kube-api-qps=+Inf"}, "--kube-api-qps"},
		{[]string{"--kube-api-qps=-Inf"}, "--kube-api-qps"},
		{[]string{"--kube-api-qps=-5"}, "--kube-api-qps"},
		{[]string{"--kube-api-qps=fast"}, "--kube-api-qps"},
		{[]string{"--kube-api-burst=0"}, "--kube-api-burst"},
		{[]string{"--kube-api-burst=-1"}, "--kube-api-burst"},
		{[]string{"--kube-api-burst=1.5"}, "--kube-api-burst"},
		{[]string{"--metrics-addr=8080"}, "--metrics-addr"},
		{[]string{"--metrics-addr=:65536"}, "--metrics-addr"},
		{[]string{"--health-addr=:http"}, "--health-addr"},
		{[]string{"--health-addr=:-1"}, "--health-addr"},
		{[]string{"--metrics-secure=maybe"}, "--metrics-secure"},
		{[]string{"--metrics-secure"}, "--metrics-secure"}, // the in-memory cluster reviews no token
		{[]string{"--metrics-cert-dir=/nonexistent"}, "--metrics-cert-dir"},
		{[]string{"--profiling=sometimes"}, "--profiling"},
		{[]string{"--workers=0"}, "--workers"},
		{[]string{"--workers=-2"}, "--workers"},
		{[]string{"--timeout=0s"}, "--timeout"},
		{[]string{"--timeout=-1s"}, "--timeout"},
		{[]string{"--timeout=soon"}, "--timeout"},
		{[]string{"--watch=often"}, "--watch"},
		{[]string{"-v=-1"}, "-v"},
		{[]string{"-v=loud"}, "-v"},
		{[]string{"--leader-elect=perhaps"}, "--leader-elect"},
		{[]string{"--leader-elect-lease-duration=0s"}, "--leader-elect-lease-duration"},
		{[]string{"--leader-elect-lease-duration=-15s"}, "--leader-elect-lease-duration"},
		{[]string{"--leader-elect-renew-deadline=20s"}, "--leader-elect-lease-duration"}, // must exceed it
		{[]string{"--leader-elect-retry-period=0s"}, "--leader-elect-retry-period"},
		{[]string{"--leader-elect-retry-period=9s"}, "--leader-elect-renew-deadline"}, // jitter
		{[]string{"--leader-elect-resource-lock=configmaps"}, "--leader-elect-resource-lock"},
		{[]string{"--leader-elect-resource-name="}, "--leader-elect-resource-name"},
		{[]string{"--leader-elect-resource-name=Bad_Name"}, "--leader-elect-resource-name"},
		{[]string{"--leader-elect-resource-namespace=Bad_NS"}, "--leader-elect-resource-namespace"},
		{[]string{"--leader-elect=false", "--leader-elect-resource-namespace=Bad_NS"}, "--leader-elect-resource-namespace"},
		{[]string{"--cache-memory-budget=lots"}, "--cache-memory-budget"},
		{[]string{"--cache-memory-budget=-1Mi"}, "--cache-memory-budget"},
		{[]string{"--cache-memory-budget=0"}, "--cache-memory-budget"},
		{[]string{"--cache-memory-budget-policy=panic"}, "--cache-memory-budget-policy"},
		{[]string{"--no-such-flag"}, "--no-such-flag"},
	}
}

// CertDirWithoutCA is a directory holding a valid tls.crt and tls.key but no ca.crt.
func CertDirWithoutCA(t *testing.T) string {
	t.Helper()
	b, err := certwatcher.SelfSigned(certwatcher.SelfSignedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := b.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(filepath.Join(dir, certwatcher.CAFileName))
	return dir
}

// Run runs each case through run (an example's demo.Runner) and checks that it exited 2 naming
// the flag and started nothing. No API server is needed: flags are checked before anything
// starts, and an in-memory run or --kubeconfig=/nonexistent never gets that far.
func Run(t *testing.T, run func(context.Context, []string, io.Writer) int, cases []Case) {
	t.Helper()
	t.Setenv("KUBECONFIG", "")
	for _, tc := range cases {
		t.Run(strings.Join(tc.Args, " "), func(t *testing.T) {
			var out strings.Builder
			code := run(context.Background(), tc.Args, &out)
			if code != 2 {
				t.Errorf("exit code %d, want 2; output:\n%s", code, out.String())
			}
			if !strings.Contains(out.String(), tc.Flag) {
				t.Errorf("the message does not name %s:\n%s", tc.Flag, out.String())
			}
			for _, started := range []string{"Running the demo", "Running against a cluster"} {
				if strings.Contains(out.String(), started) {
					t.Errorf("%s: something started", fmt.Sprint(tc.Args))
				}
			}
		})
	}
}
