package main

import (
	"context"
	"io"

	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/controller/controllertest/fakecluster"
	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/internal/kubelet"
)

func main() { demo.Main(program()) }

// run is main without os.Exit, for tests: 0 on success, 1 when the controller failed or the
// demo did not converge, 2 for bad flags.
func run(ctx context.Context, args []string, out io.Writer) int {
	return demo.Run(ctx, program(), args, out)
}

// program is what is particular to this binary; package demo does the rest (flags, cluster,
// Manager, kubelet, demo).
func program() demo.Program {
	return demo.Program{
		Name:      "replicaset",
		LeaseName: "ctrlkit-replicaset-controller",
		Workers:   5, // kube-controller-manager's --concurrent-replicaset-syncs
		Features:  features,
		Cluster: func() (fakecluster.Options, error) {
			return fakecluster.Options{Objects: seed()}, nil
		},
		Setup: func(ctx context.Context, env *demo.Env) error {
			rsc, err := NewReplicaSetController(env.Manager.Factory(), env.Client,
				Options{Workers: env.Workers, FeatureGate: env.Gate, Logger: klog.FromContext(ctx)})
			if err != nil {
				return err
			}
			klog.FromContext(ctx).Info("Feature gates", "enabled", env.Gate.Enabled(ReplicaSetSlowStartBatching), "feature", ReplicaSetSlowStartBatching)
			return env.Manager.Add(rsc)
		},
		Demo:    runDemo,
		Kubelet: &kubelet.Options{StartupDelay: podStartupDelay},
	}
}
