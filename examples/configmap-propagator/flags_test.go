package main

import (
	"testing"

	"github.com/ctrlkit/ctrlkit/examples/internal/flagtest"
)

// Every malformed flag value exits 2 naming the flag, before anything starts.
func TestRunRejectsMalformedFlags(t *testing.T) {
	flagtest.Run(t, run, append(flagtest.Common(), []flagtest.Case{
		{Args: []string{"--source-namespace="}, Flag: "--source-namespace"},
		{Args: []string{"--source-namespace=Bad_NS"}, Flag: "--source-namespace"},
		{Args: []string{"--retry-taken-after=0s"}, Flag: "--retry-taken-after"},
		{Args: []string{"--retry-taken-after=later"}, Flag: "--retry-taken-after"},
	}...))
}
