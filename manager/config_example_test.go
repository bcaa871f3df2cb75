//go:build unix

package manager_test

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/ctrlkit/ctrlkit/manager"
)

// GetConfig finds the cluster as kubectl does; here $KUBECONFIG names it.
// manager.New(manager.Options{}) calls it for you.
func ExampleGetConfig() {
	dir, _ := os.MkdirTemp("", "kubeconfig")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "config")
	_ = os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: prod, cluster: {server: "https://prod.example:6443"}}]
users: [{name: me, user: {token: secret}}]
contexts: [{name: prod, context: {cluster: prod, user: me}}]
current-context: prod
`), 0o600)
	old, had := os.LookupEnv("KUBECONFIG")
	_ = os.Setenv("KUBECONFIG", path)
	defer func() {
		if had {
			_ = os.Setenv("KUBECONFIG", old)
		} else {
			_ = os.Unsetenv("KUBECONFIG")
		}
	}()

	cfg, err := manager.GetConfig()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Host)
	// Output: https://prod.example:6443
}

// Start runs until the kubelet stops the Pod (SIGTERM) or Ctrl-C; here the
// process sends itself the SIGTERM.
func ExampleSetupSignalHandler() {
	ctx := manager.SetupSignalHandler() // mgr.Start(ctx) in a main
	_ = syscall.Kill(syscall.Getpid(), syscall.SIGTERM)
	<-ctx.Done()
	fmt.Println("stopping:", ctx.Err())
	// Output: stopping: context canceled
}
