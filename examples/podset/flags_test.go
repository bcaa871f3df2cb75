package main

import (
	"testing"

	"github.com/ctrlkit/ctrlkit/examples/internal/flagtest"
)

// Every malformed flag value exits 2 naming the flag, before anything starts.
func TestRunRejectsMalformedFlags(t *testing.T) {
	certs := flagtest.CertDirWithoutCA(t)
	kc := "--kubeconfig=/nonexistent" // a cluster, never reached: the flags are checked first
	flagtest.Run(t, run, append(flagtest.Common(), []flagtest.Case{
		{Args: []string{"--namespace=Bad_NS"}, Flag: "--namespace"},
		{Args: []string{kc, "--namespace=Bad_NS"}, Flag: "--namespace"},
		{Args: []string{"--namespace=elsewhere"}, Flag: "--namespace"}, // the in-memory demo runs in default
		{Args: []string{"--install-crd=perhaps"}, Flag: "--install-crd"},
		{Args: []string{kc, "--namespace-selector=team in (a"}, Flag: "--namespace-selector"},
		{Args: []string{"--webhook-addr=:9443"}, Flag: "--webhook-addr"}, // the in-memory cluster calls no webhook
		{Args: []string{kc, "--webhook-addr=:99999"}, Flag: "--webhook-addr"},
		{Args: []string{kc, "--webhook-addr=9443"}, Flag: "--webhook-addr"},
		{Args: []string{kc, "--webhook-cert-dir=" + certs}, Flag: "--webhook-cert-dir"}, // needs --webhook-addr
		{Args: []string{kc, "--webhook-addr=:9443", "--webhook-cert-dir=/nonexistent"}, Flag: "--webhook-cert-dir"},
		{Args: []string{kc, "--webhook-addr=:9443", "--webhook-cert-dir=" + certs, "--webhook-url=https://podset.example:9443"}, Flag: "--webhook-cert-dir"}, // no ca.crt
		{Args: []string{kc, "--webhook-addr=:9443", "--webhook-url=http://podset.example:9443"}, Flag: "--webhook-url"},
		{Args: []string{kc, "--webhook-addr=:9443", "--webhook-url=https://podset.example:9443/path"}, Flag: "--webhook-url"},
	}...))
}
