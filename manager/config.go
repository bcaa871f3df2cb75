package manager

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// GetConfig loads the API server configuration as kubectl does: the files
// $KUBECONFIG names, else ~/.kube/config, else the in-cluster configuration of
// a Pod's ServiceAccount. The name is controller-runtime's config.GetConfig;
// unlike it, GetConfig reads no command-line flag (register your own
// --kubeconfig and use clientcmd for that) and never exits the process.
func GetConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig (KUBECONFIG, ~/.kube/config or in-cluster): %w", err)
	}
	return cfg, nil
}

// SetupSignalHandler returns a context cancelled on SIGTERM (what the kubelet
// sends a Pod it stops) or SIGINT, for Start: the Manager then stops its
// controllers and releases its Lease. After the first signal the process is
// back to Go's default handling, so a second one ends it at once. The name is
// controller-runtime's; unlike it, a second call is not an error.
func SetupSignalHandler() context.Context {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop)
	return ctx
}
