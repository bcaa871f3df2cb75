package demo_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
)

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: secret}
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
`

func TestKubeconfigPrefersTheFlagThenTheEnvironment(t *testing.T) {
	t.Setenv(demo.EnvKubeconfig, "")
	assert.Empty(t, demo.Kubeconfig(""), "nothing set: the in-memory cluster")
	t.Setenv(demo.EnvKubeconfig, "/from/env")
	assert.Equal(t, "/from/env", demo.Kubeconfig(""))
	assert.Equal(t, "/from/flag", demo.Kubeconfig("/from/flag"))
}

func TestRESTConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	require.NoError(t, os.WriteFile(path, []byte(kubeconfig), 0o600))

	cfg, err := demo.RESTConfig(path)
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:6443", cfg.Host)
	assert.Equal(t, "secret", cfg.BearerToken)
	assert.Equal(t, float32(20), cfg.QPS)

	cfg, err = demo.RESTConfig(filepath.Join(dir, "missing") + string(os.PathListSeparator) + path)
	require.NoError(t, err, "a list skips missing files, as kubectl does")
	assert.Equal(t, "https://127.0.0.1:6443", cfg.Host)

	_, err = demo.RESTConfig(filepath.Join(dir, "missing"))
	assert.ErrorContains(t, err, "missing")
	_, err = demo.RESTConfig("")
	assert.Error(t, err)
}

func TestWriteKubeconfigRoundTrips(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	in := &rest.Config{Host: "https://127.0.0.1:6443", BearerToken: "tok",
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca"), ServerName: "kubernetes"}}
	require.NoError(t, demo.WriteKubeconfig(path, in))
	out, err := demo.RESTConfig(path)
	require.NoError(t, err)
	assert.Equal(t, in.Host, out.Host)
	assert.Equal(t, in.BearerToken, out.BearerToken)
	assert.Equal(t, in.CAData, out.CAData)
	assert.Equal(t, in.ServerName, out.ServerName)
	assert.Error(t, demo.WriteKubeconfig(filepath.Join(path, "under-a-file"), in))
}

func TestAwait(t *testing.T) {
	ctx := context.Background()
	n := 0
	require.NoError(t, demo.Await(ctx, 10*time.Second, "counting", func(context.Context) (bool, error) {
		n++
		return n == 3, nil
	}))
	err := demo.Await(ctx, 120*time.Millisecond, "never", func(context.Context) (bool, error) { return false, nil })
	assert.ErrorIs(t, err, demo.ErrNotConverged)
	assert.ErrorContains(t, err, "never")
	assert.ErrorIs(t, demo.Await(ctx, time.Second, "failing", func(context.Context) (bool, error) {
		return false, os.ErrPermission
	}), os.ErrPermission)
}

func TestNewLoggerWritesStructuredLines(t *testing.T) {
	var buf bytes.Buffer
	logger := demo.NewLogger(&buf, 1)
	logger.Info("Created pods", "replicaset", "demo/web", "count", 2)
	logger.V(2).Info("hidden")
	assert.Contains(t, buf.String(), `"Created pods" replicaset="demo/web" count=2`)
	assert.NotContains(t, buf.String(), "hidden")
}

// Controllers log from many goroutines; the logger serialises them, so a plain bytes.Buffer
// works as output (go test -race checks).
func TestNewLoggerIsSafeForConcurrentUse(t *testing.T) {
	var buf bytes.Buffer
	logger := demo.NewLogger(&buf, 0)
	done := make(chan struct{})
	for i := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for j := range 50 {
				logger.Info("line", "worker", i, "n", j)
			}
		}()
	}
	for range 4 {
		<-done
	}
	assert.Equal(t, 200, bytes.Count(buf.Bytes(), []byte("\n")))
}
