package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
)

func TestRunRejectsBadNamespaceSelectors(t *testing.T) {
	t.Setenv(demo.EnvKubeconfig, "")
	for want, args := range map[string][]string{
		"--namespace-selector and --namespace: give one or the other": {"--kubeconfig=/nonexistent", "--namespace-selector=team=a", "--namespace=x"},
		`--namespace-selector "team in (a"`:                           {"--kubeconfig=/nonexistent", "--namespace-selector=team in (a"},
		`the in-memory demo runs in "default"`:                        {"--namespace-selector=team=a"},
	} {
		var out bytes.Buffer
		assert.Equal(t, 2, run(context.Background(), args, &out), "%v", args)
		assert.Contains(t, out.String(), want)
	}
}
