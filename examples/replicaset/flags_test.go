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
		{Args: []string{"--feature-gates=ReplicaSetSlowStartBatching=maybe"}, Flag: "ReplicaSetSlowStartBatching"},
		{Args: []string{"--feature-gates=NoSuchGate=true"}, Flag: "NoSuchGate"},
		{Args: []string{"--sharded=yes"}, Flag: "--sharded"},
		{Args: []string{"--sharded"}, Flag: "--sharded"}, // the in-memory cluster runs one process
		{Args: []string{kc, "--shard-ring=Bad_Ring"}, Flag: "--shard-ring"},
		{Args: []string{kc, "--sharded", "--shard-ring="}, Flag: "--shard-ring"},
		{Args: []string{kc, "--sharded", "--shard-identity=Bad_Id"}, Flag: "--shard-identity"},
		{Args: []string{kc, "--sharded", "--shard-identity=r1", "--shard-namespace=Bad_NS"}, Flag: "--shard-namespace"},
		{Args: []string{kc, "--sharded", "--shard-identity=r1", "--shard-lease-duration=0s"}, Flag: "--shard-lease-duration"},
		{Args: []string{kc, "--sharded", "--shard-identity=r1", "--shard-renew-deadline=-1s"}, Flag: "--shard-renew-deadline"},
		{Args: []string{kc, "--sharded", "--shard-identity=r1", "--shard-retry-period=0s"}, Flag: "--shard-retry-period"},
		{Args: []string{kc, "--sharded", "--shard-identity=r1", "--shard-write-qps=NaN"}, Flag: "--shard-write-qps"},
		{Args: []string{kc, "--sharded", "--shard-identity=r1", "--shard-write-qps=-1"}, Flag: "--shard-write-qps"},
		{Args: []string{kc, "--sharded", "--shard-identity=r1", "--shard-write-burst=-1"}, Flag: "--shard-write-burst"},
		{Args: []string{kc, "--shard-webhook-addr=:9443", "--shard-webhook-cert-dir=" + certs}, Flag: "--shard-webhook-addr"}, // needs --sharded
		{Args: []string{kc, "--sharded", "--shard-identity=r1", "--shard-webhook-addr=:99999", "--shard-webhook-cert-dir=" + certs}, Flag: "--shard-webhook-addr"},
		{Args: []string{kc, "--sharded", "--shard-identity=r1", "--shard-webhook-addr=:9443"}, Flag: "--shard-webhook-cert-dir"},
		{Args: []string{kc, "--sharded", "--shard-identity=r1", "--shard-webhook-addr=:9443", "--shard-webhook-cert-dir=/nonexistent"}, Flag: "--shard-webhook-cert-dir"},
	}...))
}
