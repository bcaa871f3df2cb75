// Command webapp is the README's "Your first operator": each WebApp (examples.ctrlkit.dev/v1)
// runs as a Deployment and a Service it owns, with its readiness in its status and an entry
// in the webapp-registry namespace that a finalizer removes.
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
	if _, err := NewWebAppController(mgr); err != nil {
		return err
	}
	return mgr.Start(manager.SetupSignalHandler())
}
