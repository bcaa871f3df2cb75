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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/controller/controllertest/fakecluster"
	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/internal/kubelet"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/examples/podset/podset"
	"github.com/ctrlkit/ctrlkit/informer"
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
	namespace  string
	workers    int
	watch      bool
	timeout    time.Duration
	verbosity  int
}

// parse reads args; pflag.ErrHelp means -h was asked for (and usage printed).
func parse(args []string, out io.Writer) (options, error) {
	var o options
	fs := pflag.NewFlagSet("podset", pflag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig; default $KUBECONFIG; neither: run the demo on an in-memory cluster")
	fs.StringVar(&o.namespace, "namespace", "", "watch only this namespace (default all; the in-memory demo uses "+demoNamespace+")")
	fs.IntVar(&o.workers, "workers", podset.DefaultWorkers, "PodSets reconciled in parallel")
	fs.BoolVar(&o.watch, "watch", false, "in-memory cluster: keep running after the demo until interrupted")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "in-memory cluster: how long each demo step may take to converge")
	fs.IntVarP(&o.verbosity, "v", "v", 1, "log verbosity (2 shows every Pod and status write)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.workers < 1:
		return o, fmt.Errorf("--workers must be at least 1, got %d", o.workers)
	case o.timeout <= 0:
		return o, fmt.Errorf("--timeout must be positive, got %v", o.timeout)
	}
	o.kubeconfig = demo.Kubeconfig(o.kubeconfig)
	if o.kubeconfig == "" && o.namespace != "" && o.namespace != demoNamespace {
		return o, fmt.Errorf("--namespace %q: the in-memory demo runs in %q", o.namespace, demoNamespace)
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
		fmt.Fprintf(out, "podset: %v\n", err)
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

// clients are what the controller talks to: a clientset for Pods and events, a dynamic client
// for PodSets (and the CRD).
type clients struct {
	typed   kubernetes.Interface
	dynamic dynamic.Interface
}

func start(ctx context.Context, o options) error {
	logger := klog.FromContext(ctx)
	var cs clients
	if o.kubeconfig != "" {
		cfg, err := demo.RESTConfig(o.kubeconfig)
		if err != nil {
			return err
		}
		if cs.typed, err = kubernetes.NewForConfig(cfg); err != nil {
			return err
		}
		if cs.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
			return err
		}
		// Installs, never upgrades: a CRD already there is used as it is.
		if err := customresource.EnsureCRDFromYAML(ctx, cs.dynamic, v1alpha1.CRDManifest); err != nil {
			return err
		}
		logger.Info("PodSet CRD is served", "crd", v1alpha1.CRDName)
	} else {
		podsets, pods, err := seed()
		if err != nil {
			return err
		}
		objs := pods
		for _, ps := range podsets {
			objs = append(objs, ps)
		}
		cluster, err := fakecluster.NewWithOptions(fakecluster.Options{Objects: objs, Resources: []fakecluster.Resource{{
			GVR: v1alpha1.GVR, Kind: v1alpha1.Kind, Namespaced: true, StatusSubresource: true,
		}}})
		if err != nil {
			return err
		}
		cs.typed, cs.dynamic = cluster.Clientset(), cluster.Dynamic()
	}

	// Events name the objects they are about by kind: the scheme must know PodSet.
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1alpha1.AddToScheme(scheme)); err != nil {
		return err
	}
	fopts := []informer.FactoryOption{informer.WithDynamicClient(cs.dynamic), informer.WithLogger(logger)}
	if o.namespace != "" {
		fopts = append(fopts, informer.WithNamespace(o.namespace))
	}
	mgr, err := manager.New(manager.Options{Client: cs.typed, FactoryOptions: fopts, Scheme: scheme})
	if err != nil {
		return err
	}
	factory := mgr.Factory()
	c, err := podset.New(factory, cs.typed, cs.dynamic, podset.Options{
		Workers:  o.workers,
		Recorder: mgr.EventRecorderFor(podset.Name),
		Logger:   logger,
	})
	if err != nil {
		return err
	}
	if err := mgr.Add(c); err != nil {
		return err
	}
	if o.kubeconfig != "" {
		logger.Info("Running; create a PodSet with: kubectl apply -f examples/podset/podset.yaml")
		return mgr.Start(ctx) // a real cluster: run until interrupted
	}
	return runInMemory(ctx, o, cs, mgr, c)
}

// runInMemory runs the Manager and a simulated kubelet next to the scripted demo, and stops both
// when the demo ends (or, with --watch, when interrupted).
func runInMemory(ctx context.Context, o options, cs clients, mgr *manager.Manager, c *podset.Controller) error {
	k, err := kubelet.New(cs.typed, kubelet.Options{StartupDelay: 300 * time.Millisecond, Namespace: o.namespace})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	mgrDone, kubeletDone := make(chan error, 1), make(chan error, 1)
	go func() {
		mgrDone <- mgr.Start(ctx)
		cancel() // a Manager that failed ends the demo too
	}()
	go func() { kubeletDone <- k.Run(ctx) }()

	demoErr := runDemo(ctx, o, cs, c)
	if demoErr == nil && o.watch {
		klog.FromContext(ctx).Info("Demo done; watching until interrupted (Ctrl-C)")
		<-ctx.Done()
	}
	cancel()
	return errors.Join(demoErr, <-mgrDone, <-kubeletDone)
}
