package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/leaderelection"
)

// With the API server unreachable, the binary waits to install its CRD instead of exiting 1
// at once; SIGTERM then ends it with 0.
func TestRunWaitsForAnUnreachableAPIServer(t *testing.T) {
	t.Setenv(leaderelection.PodNamespaceEnv, "")
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, demo.WriteKubeconfig(path, &rest.Config{Host: "http://127.0.0.1:1"})) // nothing listens there
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out rbactest.LogBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--kubeconfig=" + path, "--metrics-addr=", "--health-addr=127.0.0.1:0", "--metrics-secure=false"}, &out)
	}()
	require.Eventually(t, func() bool {
		return strings.Contains(out.String(), `"Waiting for the API server: installing the PodSet CRD"`)
	},
		30*time.Second, 10*time.Millisecond, "%s", &out)
	select {
	case code := <-done:
		t.Fatalf("exited with %d while the API server was unreachable: %s", code, &out)
	default:
	}
	cancel()
	select {
	case code := <-done:
		assert.Equal(t, demo.ExitOK, code, out.String())
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
}
