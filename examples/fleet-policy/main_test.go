package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// run is main without os.Exit (see demo.Runner).
var run = demo.Runner(func() demo.Program { return program(&options{}) })

// The command the README shows: the demo on the in-memory clusters converges and exits 0.
func TestRunConvergesOnTheInMemoryClusters(t *testing.T) {
	t.Setenv(demo.EnvKubeconfig, "")
	var out bytes.Buffer
	code := run(context.Background(), nil, &out)
	assert.Equal(t, 0, code, out.String())
	for _, want := range []string{`cluster east: drift repaired`, `cluster north, engaged later`, `"Demo converged"`} {
		assert.Contains(t, out.String(), want)
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	t.Setenv(demo.EnvKubeconfig, "")
	for want, args := range map[string][]string{
		"--secret-key must not be empty": {"--secret-key="},
		"--source-namespace":             {"--source-namespace=Not_A_Namespace"},
		"--clusters-namespace":           {"--clusters-namespace="},
	} {
		var out bytes.Buffer
		code := run(context.Background(), args, &out)
		assert.Equal(t, 2, code, "%v: %s", args, out.String())
		assert.Contains(t, out.String(), want, "%v", args)
	}
}
