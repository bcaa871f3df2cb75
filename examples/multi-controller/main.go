package main

import (
	"context"
	"errors"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/examples/configmap-propagator/propagator"
	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

func main() { demo.Main(program(&options{})) }

// options are this binary's own flags; package demo parses the shared ones (one
// --feature-gates, one Lease, one /metrics for every controller).
type options struct {
	sourceNamespace string
}

// program is what is particular to this binary; package demo does the rest (flags, cluster,
// Manager, demo).
func program(o *options) demo.Program {
	return demo.Program{
		Name:     "multi-controller",
		Workers:  2,
		Features: features,
		AddFlags: func(fs *pflag.FlagSet) {
			fs.StringVar(&o.sourceNamespace, "source-namespace", "ctrlkit-system", "the configmap-propagator's source namespace")
		},
		Complete: func(*pflag.FlagSet, bool) error {
			if o.sourceNamespace == "" {
				return errors.New("--source-namespace must not be empty")
			}
			return demo.CheckNamespace("--source-namespace", o.sourceNamespace)
		},
		Cluster: func() (fakecluster.Options, error) {
			return fakecluster.Options{Objects: seed(o.sourceNamespace)}, nil
		},
		Setup: func(ctx context.Context, env *demo.Env) error {
			names, err := addControllers(ctx, env, o)
			klog.FromContext(ctx).Info("Controllers", "names", names)
			return err
		},
		Demo: func(ctx context.Context, env *demo.Env) error { return runDemo(ctx, env, o) },
	}
}

// addControllers builds every enabled controller on the Manager's factory and adds it to the
// Manager, returning their names.
//
// A gated-off controller is not even built, as kube-controller-manager skips the init
// function of a disabled controller: building it would ask the shared factory for its
// informers, and the Manager starts every informer of its factory, so the pod-counter would
// watch every Pod of the cluster for nothing. (Its Options.Feature is set all the same, so the
// Manager enforces the gate too.)
func addControllers(ctx context.Context, env *demo.Env, o *options) ([]string, error) {
	logger := klog.FromContext(ctx)
	prop, err := propagator.New(env.Manager.Factory(), env.Client, propagator.Options{SourceNamespace: o.sourceNamespace, Workers: env.Workers})
	if err != nil {
		return nil, err
	}
	names := []string{prop.Name()}
	if err := env.Manager.Add(prop); err != nil {
		return nil, err
	}
	if !env.Gate.Enabled(PodCounter) {
		logger.Info("Controller disabled by its feature gate", "controller", PodCounterName, "feature", PodCounter)
		return names, nil
	}
	pc, err := newPodCounter(env.Manager.Factory(), env.Client, env.Workers)
	if err != nil {
		return nil, err
	}
	return append(names, pc.Name()), env.Manager.Add(pc)
}
