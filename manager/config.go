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
// a Pod's ServiceAccount. The name is controller-runtime's config.GetConfig,
// and so is the pace: the config has no client-side rate limit (QPS -1,
// where client-go would apply 5 QPS with a burst of 10), so API Priority and
// Fairness on the server decides; set QPS and Burst (or Flags'
// --kube-api-qps) to have one. Unlike controller-runtime's, GetConfig reads
// no command-line flag (Flags registers --kubeconfig) and never exits the
// process.
func GetConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig (KUBECONFIG, ~/.kube/config or in-cluster): %w", err)
	}
	return unlimited(cfg), nil
}

// unlimited returns cfg, or a copy of it without a client-side rate limit
// when it asks for client-go's default one (QPS 0 and no RateLimiter):
// client-go's 5 QPS make 60 GETs take 10 s, which a controller's start-up
// (one GET per adopted child, say) hits at once. controller-runtime does the
// same; API Priority and Fairness protects the server.
func unlimited(cfg *rest.Config) *rest.Config {
	if cfg.QPS != 0 || cfg.RateLimiter != nil {
		return cfg
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = -1 // client-go: negative means no limiter
	return cfg
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
