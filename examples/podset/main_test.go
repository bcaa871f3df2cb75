package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// The shared API server is stopped by WithSharedAPIServer before goleak looks, so the
// connections to it are closed and their goroutines gone.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testkit.WithSharedAPIServer(m))
}

// run is main without os.Exit (see demo.Runner).
var run = demo.Runner(func() demo.Program { return program(&options{}) })

// The command docs/examples.md shows: the demo on the in-memory cluster converges and exits 0, and its log
// shows each thing the controller does.
func TestRunConvergesOnTheInMemoryCluster(t *testing.T) {
	t.Setenv(demo.EnvKubeconfig, "")
	var out bytes.Buffer
	code := run(context.Background(), nil, &out)
	require.Equal(t, 0, code, out.String())
	for _, want := range []string{
		`"Too few Pods; creating"`, `want=3 have=1`, // the orphan was adopted, two created
		`convert default/broken`, `spec.replicas: expected int32, got string \"three\"`, // reported by the informer, naming the field
		`reported with an Undecodable event`, // ... and recorded as an event on it
		`"Too many Pods; deleting"`,
		`"Nothing replaced it: the controller stopped working on web"`,
		`"Demo converged"`,
	} {
		assert.Contains(t, out.String(), want)
	}
	// Events travel through the Manager's broadcaster asynchronously; the summary shows those
	// written by then.
	assert.Regexp(t, `events="SuccessfulCreate=\d+ SuccessfulDelete=\d+"`, out.String())
}

// --watch keeps the demo's cluster and controller running until interrupted, then exits 0.
func TestRunWatchRunsUntilInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole demo")
	}
	t.Setenv(demo.EnvKubeconfig, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &rbactest.LogBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"--watch"}, out) }()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "watching until interrupted") },
		30*time.Second, 20*time.Millisecond, out.String())
	select {
	case code := <-done:
		t.Fatalf("run returned %d before it was interrupted", code)
	default:
	}
	cancel()
	assert.Equal(t, 0, <-done, out.String())
}

func TestRunFailsWhenTheDemoDoesNotConverge(t *testing.T) {
	t.Setenv(demo.EnvKubeconfig, "")
	var out bytes.Buffer
	assert.Equal(t, 1, run(context.Background(), []string{"--timeout=1ms"}, &out))
	assert.Contains(t, out.String(), "did not converge")
}

func TestRunRejectsBadFlags(t *testing.T) {
	t.Setenv(demo.EnvKubeconfig, "")
	for want, args := range map[string][]string{
		"--workers must be at least 1":         {"--workers=0"},
		"invalid argument":                     {"--timeout=soon"},
		"unknown flag: --nope":                 {"--nope"},
		`unexpected arguments ["extra"]`:       {"extra"},
		"--timeout must be positive, got 0s":   {"--timeout=0"},
		`the in-memory demo runs in "default"`: {"--namespace=prod"},
		"--webhook-addr needs a cluster":       {"--webhook-addr=127.0.0.1:9443"},
		"need --webhook-addr":                  {"--webhook-url=https://127.0.0.1:9443"},
		"want https://host[:port]":             {"--kubeconfig=/nonexistent", "--webhook-addr=:9443", "--webhook-url=http://127.0.0.1:9443"},
	} {
		var out bytes.Buffer
		assert.Equal(t, 2, run(context.Background(), args, &out), "%v", args)
		assert.Contains(t, out.String(), want)
	}
	var out bytes.Buffer
	assert.Equal(t, 0, run(context.Background(), []string{"-h"}, &out))
	assert.Contains(t, out.String(), "--kubeconfig")
}

func TestRunFailsOnAMissingKubeconfig(t *testing.T) {
	var out bytes.Buffer
	missing := filepath.Join(t.TempDir(), "missing")
	assert.Equal(t, 1, run(context.Background(), []string{"--kubeconfig", missing}, &out))
	assert.Contains(t, out.String(), missing)
}

func TestSampleManifestIsAValidPodSet(t *testing.T) {
	ps := loadSample(t)
	assert.Equal(t, "web", ps.Name)
	assert.Equal(t, int32(3), ps.Spec.DesiredReplicas())
	assert.Equal(t, ps.Spec.Selector.MatchLabels, ps.Spec.Template.Labels)
	require.Len(t, ps.Spec.Template.Spec.Containers, 1)
	_, err := os.Stat("podset.yaml")
	require.NoError(t, err)
}
