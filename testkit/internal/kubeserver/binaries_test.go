package kubeserver_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/testkit/internal/kubeserver"
)

func TestFindBinaries(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(kubeserver.EnvKubeDir, dir)
	t.Setenv(kubeserver.EnvAPIServer, "")
	t.Setenv(kubeserver.EnvEtcd, "")

	_, err := kubeserver.FindBinaries()
	require.ErrorIs(t, err, kubeserver.ErrBinariesNotFound)
	require.ErrorIs(t, err, os.ErrNotExist)

	apiserver := filepath.Join(dir, "kube-apiserver")
	require.NoError(t, os.WriteFile(apiserver, []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "etcd"), []byte("not executable"), 0o644))
	_, err = kubeserver.FindBinaries()
	require.ErrorIs(t, err, kubeserver.ErrBinariesNotFound)
	require.Contains(t, err.Error(), "etcd is not an executable file")

	other := filepath.Join(t.TempDir(), "my-etcd")
	require.NoError(t, os.WriteFile(other, []byte("#!/bin/sh\n"), 0o755))
	t.Setenv(kubeserver.EnvEtcd, other)
	bins, err := kubeserver.FindBinaries()
	require.NoError(t, err)
	require.Equal(t, kubeserver.Binaries{APIServer: apiserver, Etcd: other}, bins)
	require.False(t, errors.Is(err, kubeserver.ErrBinariesNotFound))
}

// FindBinaries says where it looked when the binaries are missing.
func ExampleFindBinaries() {
	bins, err := kubeserver.FindBinaries()
	if errors.Is(err, kubeserver.ErrBinariesNotFound) {
		fmt.Println("run `make kube` first:", err)
		return
	}
	fmt.Println("kube-apiserver:", bins.APIServer)
}
