package main

import (
	"context"
	"os"
)

// The flags. Without --kubeconfig (or $KUBECONFIG) the command runs its demo on an in-memory
// cluster; with one it installs the CRD and runs until interrupted.
func Example_help() {
	run(context.Background(), []string{"-h"}, os.Stdout)
	// Output:
	// Usage of podset:
	//       --kubeconfig string   path to a kubeconfig; default $KUBECONFIG; neither: run the demo on an in-memory cluster
	//       --namespace string    watch only this namespace (default all; the in-memory demo uses default)
	//       --timeout duration    in-memory cluster: how long each demo step may take to converge (default 30s)
	//   -v, --v int               log verbosity (2 shows every Pod and status write) (default 1)
	//       --watch               in-memory cluster: keep running after the demo until interrupted
	//       --workers int         PodSets reconciled in parallel (default 2)
}
