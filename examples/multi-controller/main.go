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
	"github.com/ctrlkit/ctrlkit/featuregate"
	"github.com/ctrlkit/ctrlkit/leaderelection"
	"github.com/ctrlkit/ctrlkit/manager"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout)
	stop()
	os.Exit(code)
}

// options are the parsed command line.
type options struct {
	kubeconfig      string // "" means the in-memory cluster
	workers         int
	metricsAddr     string
	healthAddr      string
	sourceNamespace string
	leaderElection  leaderelection.Config
	gate            *featuregate.Gate
	watch           bool
	timeout         time.Duration
	verbosity       int
}

// parse reads args into options and checks every value, so a mistake is reported before
// anything starts. pflag.ErrHelp means -h was asked for (and the usage was printed).
func parse(args []string, out io.Writer) (options, error) {
	o := options{
		gate:           featuregate.New(),
		leaderElection: leaderelection.Config{Enabled: true, Name: "ctrlkit-multi-controller", ReleaseOnCancel: true},
	}
	if err := o.gate.Add(features); err != nil {
		return o, err
	}
	fs := pflag.NewFlagSet("multi-controller", pflag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig; default $KUBECONFIG; neither: run the demo on an in-memory cluster")
	fs.IntVar(&o.workers, "workers", 2, "workers per controller")
	fs.StringVar(&o.metricsAddr, "metrics-addr", ":8080", `address of /metrics ("" disables); the demo picks a free loopback port unless set`)
	fs.StringVar(&o.healthAddr, "health-addr", ":8081", `address of /healthz and /readyz ("" disables); the demo picks a free loopback port unless set`)
	fs.StringVar(&o.sourceNamespace, "source-namespace", "ctrlkit-system", "the configmap-propagator's source namespace")
	fs.BoolVar(&o.watch, "watch", false, "in-memory cluster: keep running after the demo until interrupted")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "in-memory cluster: how long each demo step may take to converge")
	fs.IntVarP(&o.verbosity, "v", "v", 0, "log verbosity")
	o.leaderElection.AddFlags(fs)
	o.gate.AddFlag(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.gate.Freeze()

	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.workers < 1:
		return o, fmt.Errorf("--workers must be at least 1, got %d", o.workers)
	case o.timeout <= 0:
		return o, fmt.Errorf("--timeout must be positive, got %v", o.timeout)
	case o.sourceNamespace == "":
		return o, errors.New("--source-namespace must not be empty")
	}
	if o.leaderElection.Enabled {
		// A typed zero duration is an error here, not a silent default.
		if err := o.leaderElection.ValidateFlags(); err != nil {
			return o, fmt.Errorf("leader election flags: %w", err)
		}
	}
	o.kubeconfig = demo.Kubeconfig(o.kubeconfig)
	if o.kubeconfig == "" {
		if !fs.Changed("metrics-addr") {
			o.metricsAddr = "127.0.0.1:0"
		}
		if !fs.Changed("health-addr") {
			o.healthAddr = "127.0.0.1:0"
		}
	}
	return o, nil
}

// run is main without os.Exit: 0 on success, 1 when a controller failed or the demo did not
// converge, 2 for bad flags.
func run(ctx context.Context, args []string, out io.Writer) int {
	o, err := parse(args, out)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(out, "multi-controller: %v\n", err)
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

// addControllers builds every enabled controller on the Manager's factory and adds it to the
// Manager, returning their names.
//
// A gated-off controller is not even built, as kube-controller-manager skips the init
// function of a disabled controller: building it would ask the shared factory for its
// informers, and the Manager starts every informer of its factory, so the pod-counter would
// watch every Pod of the cluster for nothing. (Its Options.Feature is set all the same, so the
// Manager enforces the gate too.)
func addControllers(ctx context.Context, mgr *manager.Manager, client kubernetes.Interface, o options) ([]string, error) {
	logger := klog.FromContext(ctx)
	prop, err := propagator.New(mgr.Factory(), client, propagator.Options{SourceNamespace: o.sourceNamespace, Workers: o.workers})
	if err != nil {
		return nil, err
	}
	names := []string{prop.Name()}
	if err := mgr.Add(prop); err != nil {
		return nil, err
	}
	if !o.gate.Enabled(PodCounter) {
		logger.Info("Controller disabled by its feature gate", "controller", PodCounterName, "feature", PodCounter)
		return names, nil
	}
	pc, err := newPodCounter(mgr.Factory(), client, o.workers)
	if err != nil {
		return nil, err
	}
	return append(names, pc.Name()), mgr.Add(pc)
}

func start(ctx context.Context, o options) error {
	logger := klog.FromContext(ctx)
	var client kubernetes.Interface
	if o.kubeconfig != "" {
		cfg, err := demo.RESTConfig(o.kubeconfig)
		if err != nil {
			return err
		}
		if client, err = kubernetes.NewForConfig(cfg); err != nil {
			return err
		}
		logger.Info("Running against a cluster", "host", cfg.Host)
	} else {
		cluster, err := fakecluster.New(seed(o.sourceNamespace)...)
		if err != nil {
			return err
		}
		client = cluster.Clientset()
		logger.Info("Running the demo on an in-memory cluster")
	}

	mgr, err := manager.New(manager.Options{
		Client:          client,
		LeaderElection:  &o.leaderElection,
		FeatureGate:     o.gate,
		MetricsAddr:     o.metricsAddr,
		HealthProbeAddr: o.healthAddr,
	})
	if err != nil {
		return err
	}
	names, err := addControllers(ctx, mgr, client, o)
	if err != nil {
		return err
	}
	logger.Info("Controllers", "names", names)
	if o.kubeconfig != "" {
		return mgr.Start(ctx)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- mgr.Start(ctx)
		cancel()
	}()
	demoErr := runDemo(ctx, client, o)
	if demoErr == nil && o.watch {
		logger.Info("Demo done; watching until interrupted (Ctrl-C)", "metrics", mgr.MetricsAddr(), "health", mgr.HealthProbeAddr())
		<-ctx.Done()
	}
	cancel()
	return errors.Join(demoErr, <-done)
}
