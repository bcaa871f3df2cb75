// Command first-controller is the README's "Your first controller": a ConfigMap <name>-info
// (replicas, image) owned by every Deployment labelled team, deleted when the label goes.
package main

import (
	"context"
	"os"
	"os/signal"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/manager"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx); err != nil {
		klog.ErrorS(err, "Exiting")
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), nil).ClientConfig()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	mgr, err := manager.New(manager.Options{Client: cs})
	if err != nil {
		return err
	}
	c, err := NewInfoController(mgr.Factory(), cs)
	if err != nil {
		return err
	}
	if err := mgr.Add(c); err != nil {
		return err
	}
	return mgr.Start(ctx)
}
