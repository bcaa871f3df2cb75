package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
)

// run is main without os.Exit (see demo.Runner).
var run = demo.Runner(program)

// The README's first command: `go run ./examples/replicaset` converges and exits 0.
func TestRunConvergesOnTheInMemoryCluster(t *testing.T) {
	t.Setenv(demo.EnvKubeconfig, "")
	var out bytes.Buffer
	code := run(context.Background(), nil, &out)
	require.Equal(t, 0, code, out.String())
	for _, want := range []string{
		`"Successfully acquired lease"`,
		`"Adopted pod"`, `pod="demo/web-orphan"`,
		`"Released pod"`, `pod="demo/web-legacy"`,
		`"Too many replicas, deleting pods"`, `key="demo/api"`,
		`creating=7`, // in slow-start batches of 1, 2 and 4 (logged at -v=4 by package replicas)
		`"Demo converged"`,
	} {
		assert.Contains(t, out.String(), want)
	}
}

// With the gate off the demo still converges, with no batches.
func TestRunWithSlowStartOff(t *testing.T) {
	t.Setenv(demo.EnvKubeconfig, "")
	var out bytes.Buffer
	code := run(context.Background(), []string{"--feature-gates=ReplicaSetSlowStartBatching=false", "--leader-elect=false"}, &out)
	require.Equal(t, 0, code, out.String())
	assert.NotContains(t, out.String(), `"Slow-start batch"`)
	assert.NotContains(t, out.String(), `"Contending for leadership"`)
	assert.Contains(t, out.String(), `"Demo converged"`)
}

// With --watch the binary keeps running after the demo, serving the Manager's probes and
// metrics, until its context ends; then it exits 0.
func TestRunWatchServesProbesAndMetrics(t *testing.T) {
	t.Setenv(demo.EnvKubeconfig, "")
	var out rbactest.LogBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"--watch"}, &out) }()

	re := regexp.MustCompile(`"Demo done; watching until interrupted \(Ctrl-C\)".* metrics="([^"]+)" health="([^"]+)"`)
	var m []string
	require.Eventually(t, func() bool { m = re.FindStringSubmatch(out.String()); return m != nil }, time.Minute, 10*time.Millisecond, "demo did not finish")
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	code, body := get("http://" + m[2] + "/readyz")
	assert.Equal(t, http.StatusOK, code, body)
	code, _ = get("http://" + m[2] + "/healthz")
	assert.Equal(t, http.StatusOK, code)
	code, body = get("http://" + m[1] + "/metrics")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `controller_runtime_reconcile_total{controller="replicaset",result="success"}`)
	assert.Contains(t, body, `workqueue_adds_total{controller="replicaset",name="replicaset"}`)

	cancel()
	select {
	case code := <-done:
		assert.Equal(t, 0, code, out.String())
	case <-time.After(time.Minute):
		t.Fatal("run did not return after its context ended")
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	t.Setenv(demo.EnvKubeconfig, "")
	for want, args := range map[string][]string{
		"--workers must be at least 1, got 0":              {"--workers=0"},
		"unrecognized feature gate: Bogus":                 {"--feature-gates=Bogus=true"},
		"5s must be greater than renewDeadline 10s":        {"--leader-elect-lease-duration=5s"},
		`unsupported resource lock "endpoints"`:            {"--leader-elect-resource-lock=endpoints"},
		`invalid argument "forever" for "--timeout" flag`:  {"--timeout=forever"},
		"unknown flag: --replicas":                         {"--replicas=3"},
		`unexpected arguments ["now"]`:                     {"now"},
		"--timeout must be positive":                       {"--timeout=-1s"},
		"config: retryPeriod 0s must be greater than zero": {"--leader-elect-retry-period=0s"},
	} {
		var out bytes.Buffer
		assert.Equal(t, 2, run(context.Background(), args, &out), "%v: %s", args, out.String())
		assert.Contains(t, out.String(), want, "%v", args)
		assert.True(t, strings.HasPrefix(out.String(), "replicaset: ") || strings.Contains(out.String(), "Usage"), out.String())
	}
	var out bytes.Buffer
	assert.Equal(t, 0, run(context.Background(), []string{"--help"}, &out))
	for _, flag := range []string{"--kubeconfig", "--leader-elect", "--leader-elect-lease-duration", "--feature-gates", "ReplicaSetSlowStartBatching=true|false (BETA - default=true)", "--workers", "--metrics-addr", "--health-addr", "--watch"} {
		assert.Contains(t, out.String(), flag)
	}
}

// A port already taken is a runtime failure (exit 1), named in the log.
func TestRunFailsWhenItCannotServe(t *testing.T) {
	t.Setenv(demo.EnvKubeconfig, "")
	var out bytes.Buffer
	code := run(context.Background(), []string{"--metrics-addr=256.0.0.1:1"}, &out)
	assert.Equal(t, 1, code)
	assert.Contains(t, out.String(), "256.0.0.1:1")
}
