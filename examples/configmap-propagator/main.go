package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/ctrlkit/ctrlkit/examples/configmap-propagator/propagator"
	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

func main() { demo.Main(program(&options{})) }

// options are this binary's own flags; package demo parses the shared ones.
type options struct {
	opts propagator.Options
}

// program is what is particular to this binary; package demo does the rest (flags, cluster,
// Manager, demo).
func program(o *options) demo.Program {
	return demo.Program{
		Name:    "configmap-propagator",
		Workers: 2,
		AddFlags: func(fs *pflag.FlagSet) {
			fs.StringVar(&o.opts.SourceNamespace, "source-namespace", "ctrlkit-system", "namespace whose ConfigMaps labelled "+propagator.LabelPropagate+"=true are propagated")
			fs.DurationVar(&o.opts.RetryTakenAfter, "retry-taken-after", 30*time.Second, "when to look again at a target whose ConfigMap name is taken (1s in the demo unless set)")
		},
		Complete: func(fs *pflag.FlagSet, inMemory bool) error {
			switch {
			case o.opts.SourceNamespace == "":
				return errors.New("--source-namespace must not be empty")
			case o.opts.RetryTakenAfter <= 0:
				return fmt.Errorf("--retry-taken-after must be positive, got %v", o.opts.RetryTakenAfter)
			}
			if err := demo.CheckNamespace("--source-namespace", o.opts.SourceNamespace); err != nil {
				return err
			}
			if inMemory && !fs.Changed("retry-taken-after") {
				o.opts.RetryTakenAfter = time.Second
			}
			return nil
		},
		Cluster: func() (fakecluster.Options, error) {
			return fakecluster.Options{Objects: seed(o.opts.SourceNamespace)}, nil
		},
		Setup: func(ctx context.Context, env *demo.Env) error {
			opts := o.opts
			opts.Workers = env.Workers
			c, err := propagator.New(env.Manager.Factory(), env.Client, opts)
			if err != nil {
				return err
			}
			return env.Manager.Add(c)
		},
		Demo: func(ctx context.Context, env *demo.Env) error { return runDemo(ctx, env, o) },
	}
}
