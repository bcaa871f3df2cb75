// Command first-controller is the README's "Your first controller": a ConfigMap <name>-info
// (replicas, image) owned by every Deployment labelled team, deleted when the label goes.
package main

import (
	"os"

	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/manager"
)

func main() {
	if err := run(); err != nil {
		klog.ErrorS(err, "Exiting")
		os.Exit(1)
	}
}

func run() error {
	mgr, err := manager.New(manager.Options{}) // the kubeconfig as kubectl finds it
	if err != nil {
		return err
	}
	if _, err := NewInfoController(mgr); err != nil {
		return err
	}
	return mgr.Start(manager.SetupSignalHandler())
}
