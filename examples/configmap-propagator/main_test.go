package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// The shared API server (rbac_test.go) is stopped by WithSharedAPIServer before goleak looks.
func TestMain(m *testing.M) { goleak.VerifyTestMain(testkit.WithSharedAPIServer(m)) }

// run is main without os.Exit (see demo.Runner).
var run = demo.Runner(func() demo.Program { return program(&options{}) })

// The command docs/examples.md shows: the demo on the in-memory cluster converges and exits 0.
func TestRunConvergesOnTheInMemoryCluster(t *testing.T) {
	t.Setenv(demo.EnvKubeconfig, "")
	var out bytes.Buffer
	code := run(context.Background(), nil, &out)
	assert.Equal(t, 0, code, out.String())
	for _, want := range []string{
		`"Creating copy"`, `copy="team-a/shared-config"`, `"Updating copy"`, `"Deleting copy"`,
		`terminal error`, `ctrlkit-system/broken`, // the bad selector is reported, not retried
		`"Demo converged"`,
	} {
		assert.Contains(t, out.String(), want)
	}
	// docs/examples.md promises the bad selector is logged once: namespace events do not bring it back.
	assert.Equal(t, 1, strings.Count(out.String(), `key="ctrlkit-system/broken"`), out.String())
}

func TestRunRejectsBadFlags(t *testing.T) {
	t.Setenv(demo.EnvKubeconfig, "")
	for args, want := range map[string][]string{
		"--workers must be at least 1":      {"--workers=0"},
		"invalid argument":                  {"--timeout=soon"},
		"unknown flag: --nope":              {"--nope"},
		"--retry-taken-after must be":       {"--retry-taken-after=-1s"},
		`unexpected arguments ["extra"]`:    {"extra"},
		"--timeout must be positive, got 0": {"--timeout=0"},
	} {
		var out bytes.Buffer
		assert.Equal(t, 2, run(context.Background(), want, &out), "%v", want)
		assert.Contains(t, out.String(), args)
	}
	var out bytes.Buffer
	assert.Equal(t, 0, run(context.Background(), []string{"-h"}, &out))
	assert.Contains(t, out.String(), "--source-namespace")
}

func TestRunFailsOnAMissingKubeconfig(t *testing.T) {
	var out bytes.Buffer
	code := run(context.Background(), []string{"--kubeconfig", filepath.Join(t.TempDir(), "missing")}, &out)
	assert.Equal(t, 1, code)
	assert.Contains(t, out.String(), "missing")
}
