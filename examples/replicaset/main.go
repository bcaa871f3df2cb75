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
	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/internal/kubelet"
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
	kubeconfig     string // "" means the in-memory cluster
	workers        int
	metricsAddr    string
	healthAddr     string
	leaderElection leaderelection.Config
	gate           *featuregate.Gate
	watch          bool
	timeout        time.Duration
	verbosity      int
}

// parse reads args into options and checks them; pflag.ErrHelp means -h was asked for (and the
// usage was printed).
func parse(args []string, out io.Writer) (options, error) {
	o := options{
		gate: featuregate.New(),
		// kube-controller-manager's defaults: elect (standbys stay warm), and hand the Lease
		// over at once on a clean shutdown instead of after a lease duration.
		leaderElection: leaderelection.Config{Enabled: true, Name: "ctrlkit-replicaset-controller", ReleaseOnCancel: true},
	}
	if err := AddFeatures(o.gate); err != nil {
		return o, err
	}
	fs := pflag.NewFlagSet("replicaset", pflag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig; default $KUBECONFIG; neither: run the demo on an in-memory cluster")
	fs.IntVar(&o.workers, "workers", 5, "ReplicaSets synced in parallel")
	fs.StringVar(&o.metricsAddr, "metrics-addr", ":8080", `address of /metrics ("" disables); the demo picks a free loopback port unless set`)
	fs.StringVar(&o.healthAddr, "health-addr", ":8081", `address of /healthz and /readyz ("" disables); the demo picks a free loopback port unless set`)
	fs.BoolVar(&o.watch, "watch", false, "in-memory cluster: keep running after the demo until interrupted")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "in-memory cluster: how long each demo step may take to converge")
	fs.IntVarP(&o.verbosity, "v", "v", 0, "log verbosity (1: kubelet, 2: more of the controller, 4: events)")
	o.leaderElection.AddFlags(fs)
	o.gate.AddFlag(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.gate.Freeze() // nothing may flip a gate once the controller runs

	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.workers < 1:
		return o, fmt.Errorf("--workers must be at least 1, got %d", o.workers)
	case o.timeout <= 0:
		return o, fmt.Errorf("--timeout must be positive, got %v", o.timeout)
	}
	if o.leaderElection.Enabled {
		// A typed zero duration is an error here, not a silent default.
		if err := o.leaderElection.ValidateFlags(); err != nil {
			return o, fmt.Errorf("leader election flags: %w", err)
		}
	}
	o.kubeconfig = demo.Kubeconfig(o.kubeconfig)
	if o.kubeconfig == "" {
		// The demo must start whatever else listens on :8080 here.
		if !fs.Changed("metrics-addr") {
			o.metricsAddr = "127.0.0.1:0"
		}
		if !fs.Changed("health-addr") {
			o.healthAddr = "127.0.0.1:0"
		}
	}
	return o, nil
}

// run is main without os.Exit, so tests can call it: 0 on success, 1 when the controller
// failed or the demo did not converge, 2 for bad flags.
func run(ctx context.Context, args []string, out io.Writer) int {
	o, err := parse(args, out)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(out, "replicaset: %v\n", err)
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

// start wires the controller into a Manager on a real or the in-memory cluster and runs it.
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
		cluster, err := fakecluster.New(seed()...)
		if err != nil {
			return err
		}
		client = cluster.Clientset()
		logger.Info("Running the demo on an in-memory cluster", "namespace", demoNamespace)
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
	rsc, err := NewReplicaSetController(mgr.Factory(), client, Options{Workers: o.workers, FeatureGate: o.gate, Logger: logger})
	if err != nil {
		return err
	}
	if err := mgr.Add(rsc.Controller()); err != nil {
		return err
	}
	logger.Info("Feature gates", "enabled", o.gate.Enabled(ReplicaSetSlowStartBatching), "feature", ReplicaSetSlowStartBatching)
	if o.kubeconfig != "" {
		return mgr.Start(ctx) // until interrupted, or the Lease is lost
	}

	// The in-memory cluster: main owns the simulated kubelet, the Manager and the demo, and
	// stops the first two once the demo is done.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	k, err := kubelet.New(client, kubelet.Options{StartupDelay: podStartupDelay})
	if err != nil {
		return err
	}
	kubeletDone, mgrDone := make(chan error, 1), make(chan error, 1)
	go func() { kubeletDone <- k.Run(ctx) }()
	go func() {
		mgrDone <- mgr.Start(ctx)
		cancel() // a Manager that failed ends the demo too
	}()
	demoErr := runDemo(ctx, client, o.timeout)
	if demoErr == nil && o.watch {
		logger.Info("Demo done; watching until interrupted (Ctrl-C)", "metrics", mgr.MetricsAddr(), "health", mgr.HealthProbeAddr())
		<-ctx.Done()
	}
	cancel()
	return errors.Join(demoErr, <-mgrDone, <-kubeletDone)
}
