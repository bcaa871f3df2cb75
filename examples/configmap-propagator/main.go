package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/controller/controllertest/fakecluster"
	"github.com/ctrlkit/ctrlkit/examples/configmap-propagator/propagator"
	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/manager"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout)
	stop()
	os.Exit(code)
}

// options are the command line.
type options struct {
	kubeconfig string
	opts       propagator.Options
	watch      bool
	timeout    time.Duration
	verbosity  int
}

// parse reads args; pflag.ErrHelp means -h was asked for (and usage printed).
func parse(args []string, out io.Writer) (options, error) {
	var o options
	fs := pflag.NewFlagSet("configmap-propagator", pflag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig; default $KUBECONFIG; neither: run the demo on an in-memory cluster")
	fs.StringVar(&o.opts.SourceNamespace, "source-namespace", "ctrlkit-system", "namespace whose ConfigMaps labelled "+propagator.LabelPropagate+"=true are propagated")
	fs.IntVar(&o.opts.Workers, "workers", 2, "ConfigMaps reconciled in parallel")
	fs.DurationVar(&o.opts.RetryTakenAfter, "retry-taken-after", 30*time.Second, "when to look again at a target whose ConfigMap name is taken (1s in the demo unless set)")
	fs.BoolVar(&o.watch, "watch", false, "in-memory cluster: keep running after the demo until interrupted")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "in-memory cluster: how long each demo step may take to converge")
	fs.IntVarP(&o.verbosity, "v", "v", 0, "log verbosity")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.opts.Workers < 1:
		return o, fmt.Errorf("--workers must be at least 1, got %d", o.opts.Workers)
	case o.opts.RetryTakenAfter <= 0:
		return o, fmt.Errorf("--retry-taken-after must be positive, got %v", o.opts.RetryTakenAfter)
	case o.timeout <= 0:
		return o, fmt.Errorf("--timeout must be positive, got %v", o.timeout)
	}
	o.kubeconfig = demo.Kubeconfig(o.kubeconfig)
	if o.kubeconfig == "" && !fs.Changed("retry-taken-after") {
		o.opts.RetryTakenAfter = time.Second
	}
	return o, nil
}

// run is main without os.Exit: 0 on success, 1 when the controller failed or the demo did not
// converge, 2 for bad flags.
func run(ctx context.Context, args []string, out io.Writer) int {
	o, err := parse(args, out)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(out, "configmap-propagator: %v\n", err)
		return 2
	}
	logger := demo.NewLogger(out, o.verbosity)
	ctx = klog.NewContext(ctx, logger)
	if err := start(ctx, o); err != nil {
		logger.Error(err, "Exiting")
		return 1
	}
	return 0
}

func start(ctx context.Context, o options) error {
	var client kubernetes.Interface
	if o.kubeconfig != "" {
		cfg, err := demo.RESTConfig(o.kubeconfig)
		if err != nil {
			return err
		}
		if client, err = kubernetes.NewForConfig(cfg); err != nil {
			return err
		}
	} else {
		cluster, err := fakecluster.New(seed(o.opts.SourceNamespace)...)
		if err != nil {
			return err
		}
		client = cluster.Clientset()
	}

	mgr, err := manager.New(manager.Options{Client: client})
	if err != nil {
		return err
	}
	c, err := propagator.New(mgr.Factory(), client, o.opts)
	if err != nil {
		return err
	}
	if err := mgr.Add(c); err != nil {
		return err
	}
	if o.kubeconfig != "" {
		return mgr.Start(ctx) // a real cluster: run until interrupted
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- mgr.Start(ctx)
		cancel() // a Manager that failed ends the demo too
	}()
	demoErr := runDemo(ctx, client, o)
	if demoErr == nil && o.watch {
		klog.FromContext(ctx).Info("Demo done; watching until interrupted (Ctrl-C)")
		<-ctx.Done()
	}
	cancel()
	return errors.Join(demoErr, <-done)
}
