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
		{Args: []string{"--feature-gates=PodCounter=maybe"}, Flag: "PodCounter"},
		{Args: []string{"--feature-gates=NoSuchGate=true"}, Flag: "NoSuchGate"},
	}...))
}
