package demo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/examples/internal/kubelet"
	"github.com/ctrlkit/ctrlkit/featuregate"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/leaderelection"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/sharding"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
	"github.com/ctrlkit/ctrlkit/webhook"
)

// Program is what one example binary says about itself. Run does what every example does with
// it: the flags they share, the cluster (a real one, or the in-memory one), the Manager, the
// simulated kubelet and the scripted demo. Only Name, Setup and Demo are required.
type Program struct {
	// Name is the binary's name: its flag set's and the prefix of its flag errors.
	Name string
	// LeaseName is the default of --leader-elect-resource-name; "" means "ctrlkit-" + Name.
	LeaseName string
	// Workers is the default of --workers (0 means 2).
	Workers int
	// Verbosity is the default of -v.
	Verbosity int
	// Features are the binary's feature gates; --feature-gates sets them.
	Features map[featuregate.Feature]featuregate.FeatureSpec
	// AddFlags registers the binary's own flags.
	AddFlags func(fs *pflag.FlagSet)
	// Complete checks the binary's own flag values after parsing (an error exits 2 before
	// anything starts) and may change defaults for the in-memory demo.
	Complete func(fs *pflag.FlagSet, inMemory bool) error
	// Cluster is the in-memory cluster's content: seed objects and custom resources.
	Cluster func() (fakecluster.Options, error)
	// Scheme resolves the kinds of objects events are about; nil means client-go's. A binary
	// that records events on its custom resources passes a scheme that knows them.
	Scheme *runtime.Scheme
	// Cache adjusts the Options of the Manager's informer factory (and the ring's), which come
	// with the dynamic client, the logger and the --cache-memory-budget flags set (for example
	// Namespace from a flag).
	Cache func(o *informer.Options)
	// Setup builds the controllers on env.Manager's factory and adds them to env.Manager.
	Setup func(ctx context.Context, env *Env) error
	// Demo walks through the scripted steps on the in-memory cluster; it returns when they
	// converged (nil) or one did not.
	Demo func(ctx context.Context, env *Env) error
	// Kubelet, when set, runs a simulated kubelet next to the in-memory demo.
	Kubelet *kubelet.Options
	// RealClusterHint is logged when the binary runs against a real cluster (what to apply).
	RealClusterHint string
	// Sharding, when set, lets the binary run sharded: it gets the ring's flags (--shard-ring
	// and the others of sharding.Config.AddFlags) and --sharded, shorthand for
	// --shard-ring=Sharding.Ring. Sharded, Setup finds Env.Sharded set and takes the informers
	// of the sharded resource and its children from Env.Manager.ShardFactory().
	Sharding *Sharding
}

// ShardedListAndWatch is the feature gate (alpha, off) of a sharded binary's server-side
// mode (sharding.ModeServer), named after the API server's gate it needs: its members select
// hash slots of the sharded resource with ListOptions.ShardSelector, and no object is labelled.
const ShardedListAndWatch featuregate.Feature = "ShardedListAndWatch"

// Sharding is what a binary that can run sharded shards.
type Sharding struct {
	// Ring is the ring --sharded joins.
	Ring string
	// Resource is the sharded resource: its objects are the keys split across the replicas.
	Resource schema.GroupVersionResource
	// Kind is Resource's kind, the kind the assignment webhook (--shard-webhook-addr) admits.
	Kind schema.GroupVersionKind
	// Children are the resources whose objects follow their controlling owner.
	Children []schema.GroupVersionResource
}

// Env is what Setup and Demo get: the clients, the Manager and the shared flags' values.
type Env struct {
	Client   kubernetes.Interface
	Dynamic  dynamic.Interface
	Manager  *manager.Manager
	Gate     *featuregate.Gate
	Workers  int
	Timeout  time.Duration
	InMemory bool
	// Sharded is true when the binary runs as a member of a ring (--sharded or --shard-ring):
	// Manager has Options.Sharding set.
	Sharded bool
}

// Step logs what it waits for, waits until cond holds (at most env.Timeout) and logs that it
// converged: one demo step.
func (e *Env) Step(ctx context.Context, what string, cond func(context.Context) (bool, error)) error {
	logger := klog.FromContext(ctx).WithName("demo")
	logger.Info("Waiting: " + what)
	start := time.Now()
	if err := Await(ctx, e.Timeout, what, cond); err != nil {
		return err
	}
	logger.Info("Converged: "+what, "after", time.Since(start).Round(time.Millisecond))
	return nil
}

// Settings are the values of the flags every example shares, as Parse checked them: the
// Manager's (manager.Flags, what a user's main registers too) and the demo's own.
type Settings struct {
	// Flags are the Manager's flags. Kubeconfig "" means the in-memory cluster: Parse resolves
	// it with $KUBECONFIG and never reads ~/.kube/config. MetricsSecure is false on the
	// in-memory cluster, which cannot review tokens.
	manager.Flags
	Workers int
	// Shard is the ring this replica joins; Shard.Ring is "" when it runs unsharded.
	Shard sharding.Config
	// ShardWebhookAddr and ShardWebhookCertDir serve the ring's admission-time assignment
	// (webhook.NewShardAssigning) on host:port with the certificate in the directory
	// (--shard-webhook-addr, --shard-webhook-cert-dir); "" serves none.
	ShardWebhookAddr    string
	ShardWebhookCertDir string
	Gate                *featuregate.Gate
	Watch               bool
	Timeout             time.Duration
}

// Exit codes of Run.
const (
	ExitOK      = 0
	ExitFailed  = 1 // the controllers failed, or the demo did not converge
	ExitBadArgs = 2 // a flag was wrong, or does not fit the cluster (a Lease namespace that does not exist); nothing was started
)

// Main is func main of an example: Run on os.Args until SIGINT or SIGTERM, then exit with its
// code.
func Main(p Program) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, p, os.Args[1:], os.Stdout)
	stop()
	os.Exit(code)
}

// Run is an example's main without os.Exit, so tests can call it: it parses and checks every
// flag before anything starts (ExitBadArgs with a message naming the flag), then runs the
// controllers against the cluster of --kubeconfig until ctx ends, or, without one, on the
// in-memory cluster next to the scripted demo until it converged (ExitOK) or did not
// (ExitFailed).
func Run(ctx context.Context, p Program, args []string, out io.Writer) int {
	s, err := Parse(p, args, out)
	if errors.Is(err, pflag.ErrHelp) {
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(out, "%s: %v\n", p.Name, err)
		return ExitBadArgs
	}
	logger := NewLogger(out, s.Verbosity)
	ctx = klog.NewContext(ctx, logger)
	if err := start(ctx, p, s); err != nil {
		logger.Error(err, "Exiting")
		if errors.Is(err, manager.ErrInvalidOptions) {
			// An option a flag sets is wrong in this cluster, such as a Lease namespace
			// that does not exist (the Manager names the flag): nothing was started.
			return ExitBadArgs
		}
		return ExitFailed
	}
	return ExitOK
}

// Runner is Run for an example's tests, with the signature rbactest.RunFunc expects: each call
// runs a fresh Program from newProgram (so no flag value leaks from one run into the next).
func Runner(newProgram func() Program) func(ctx context.Context, args []string, out io.Writer) int {
	return func(ctx context.Context, args []string, out io.Writer) int {
		return Run(ctx, newProgram(), args, out)
	}
}

// Parse registers the shared and the program's own flags, parses args and checks every value
// (the program's through Complete): what Run does before anything starts. pflag.ErrHelp means
// -h was asked for (and the usage was printed to out).
func Parse(p Program, args []string, out io.Writer) (*Settings, error) {
	lease := p.LeaseName
	if lease == "" {
		lease = "ctrlkit-" + p.Name
	}
	s := &Settings{Gate: featuregate.New()}
	// kube-controller-manager's defaults: elect (standbys stay warm), and hand the Lease over
	// at once on a clean shutdown instead of after a lease duration; 20 QPS, burst 30.
	s.LeaderElection = leaderelection.Config{Enabled: true, Name: lease, ReleaseOnCancel: true}
	s.QPS, s.Burst = 20, 30
	s.MetricsSecure = true
	s.Verbosity = p.Verbosity
	if len(p.Features) > 0 {
		if err := s.Gate.Add(p.Features); err != nil {
			return nil, err
		}
	}
	if p.Sharding != nil {
		if err := s.Gate.Add(map[featuregate.Feature]featuregate.FeatureSpec{
			ShardedListAndWatch: {Default: false, PreRelease: featuregate.Alpha},
		}); err != nil {
			return nil, err
		}
	}
	workers := p.Workers
	if workers == 0 {
		workers = 2
	}
	fs := pflag.NewFlagSet(p.Name, pflag.ContinueOnError)
	fs.SetOutput(out)
	s.Flags.AddFlags(fs)
	fs.Lookup("kubeconfig").Usage = "path to a kubeconfig; default $KUBECONFIG; neither: run the demo on an in-memory cluster"
	fs.Lookup("metrics-addr").Usage += "; the demo picks a free loopback port unless set"
	fs.Lookup("health-addr").Usage += "; the demo picks a free loopback port unless set"
	fs.Lookup("metrics-secure").Usage += "; the in-memory demo serves plain HTTP, as it cannot review tokens"
	fs.IntVar(&s.Workers, "workers", workers, "objects reconciled in parallel, per controller")
	fs.BoolVar(&s.Watch, "watch", false, "in-memory cluster: keep running after the demo until interrupted")
	fs.DurationVar(&s.Timeout, "timeout", 30*time.Second, "in-memory cluster: how long each demo step may take to converge")
	var sharded bool
	if p.Sharding != nil {
		fs.BoolVar(&sharded, "sharded", false, fmt.Sprintf("run as one of several replicas that split the %s between them: "+
			"shorthand for --shard-ring=%s (needs --kubeconfig; turns --leader-elect off unless it is given)",
			p.Sharding.Resource.Resource, p.Sharding.Ring))
		s.Shard.AddFlags(fs)
		fs.StringVar(&s.ShardWebhookAddr, "shard-webhook-addr", "", "serve the mutating webhook that assigns new "+
			p.Sharding.Resource.Resource+" to their member as they are created, on this host:port, at "+ShardWebhookPath+
			" (\"\" serves none; the sharder then assigns them)")
		fs.StringVar(&s.ShardWebhookCertDir, "shard-webhook-cert-dir", "", "directory of the assignment webhook's tls.crt and tls.key, reloaded when they change (needs --shard-webhook-addr)")
	}
	if len(p.Features) > 0 || p.Sharding != nil {
		s.Gate.AddFlag(fs)
	}
	if p.AddFlags != nil {
		p.AddFlags(fs)
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	s.Gate.Freeze() // nothing may flip a gate once the controllers run

	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	case s.Workers < 1:
		return nil, fmt.Errorf("--workers must be at least 1, got %d", s.Workers)
	case s.Timeout <= 0:
		return nil, fmt.Errorf("--timeout must be positive, got %v", s.Timeout)
	}
	s.Kubeconfig = Kubeconfig(s.Kubeconfig)
	inMemory := s.Kubeconfig == ""
	if inMemory {
		// The demo must start whatever else listens on :8080 here.
		if !fs.Changed("metrics-addr") {
			s.MetricsAddr = "127.0.0.1:0"
		}
		if !fs.Changed("health-addr") {
			s.HealthProbeAddr = "127.0.0.1:0"
		}
		if !fs.Changed("metrics-secure") {
			s.MetricsSecure = false
		}
	}
	if err := s.Flags.Validate(); err != nil {
		return nil, err
	}
	if s.MetricsSecure && inMemory {
		return nil, errors.New("--metrics-secure needs a cluster (--kubeconfig): the in-memory one cannot review tokens (TokenReview, SubjectAccessReview)")
	}
	if p.Sharding != nil {
		if err := completeSharding(p, s, fs, sharded, inMemory); err != nil {
			return nil, err
		}
	}
	if p.Complete != nil {
		if err := p.Complete(fs, inMemory); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// completeSharding resolves --sharded and checks the ring's flags together: a sharded binary
// runs against a cluster, and its replicas share the work instead of electing a leader.
func completeSharding(p Program, s *Settings, fs *pflag.FlagSet, sharded, inMemory bool) error {
	if sharded {
		if fs.Changed("shard-ring") && s.Shard.Ring == "" {
			return errors.New("--sharded with an empty --shard-ring: leave --shard-ring out, or name the ring")
		}
		if !fs.Changed("shard-ring") {
			s.Shard.Ring = p.Sharding.Ring
		}
	}
	if err := s.Shard.ValidateFlags(); err != nil {
		return fmt.Errorf("sharding flags: %w", err)
	}
	switch {
	case s.ShardWebhookAddr != "" && !s.Shard.Sharded():
		return errors.New("--shard-webhook-addr needs --sharded (or --shard-ring)")
	case s.ShardWebhookAddr != "" && s.ShardWebhookCertDir == "":
		return errors.New("--shard-webhook-addr needs --shard-webhook-cert-dir: the API server calls webhooks over HTTPS, with the caBundle of the certificate there")
	case s.ShardWebhookAddr == "" && s.ShardWebhookCertDir != "":
		return errors.New("--shard-webhook-cert-dir needs --shard-webhook-addr")
	}
	if err := CheckAddr("--shard-webhook-addr", s.ShardWebhookAddr); err != nil {
		return err
	}
	if err := CheckCertDir("--shard-webhook-cert-dir", s.ShardWebhookCertDir, false); err != nil {
		return err
	}
	if !s.Shard.Sharded() {
		return nil
	}
	if inMemory {
		return errors.New("--sharded (--shard-ring) needs a cluster (--kubeconfig): replicas share the work through Leases and labels on a real API server; the in-memory demo runs one process")
	}
	if !fs.Changed("leader-elect") {
		// Every member reconciles its share: an election would only add a Lease.
		s.LeaderElection.Enabled = false
	}
	return nil
}

// start builds the clients, the Manager and the controllers, and runs them.
func start(ctx context.Context, p Program, s *Settings) error {
	logger := klog.FromContext(ctx)
	env := &Env{Gate: s.Gate, Workers: s.Workers, Timeout: s.Timeout, InMemory: s.Kubeconfig == "", Sharded: s.Shard.Sharded()}
	var meta metadata.Interface     // the sharder's and the dispatchers' client, when sharded
	var leases kubernetes.Interface // the ring's Lease client, when sharded
	var mopts manager.Options
	if !env.InMemory {
		var err error
		if mopts, err = s.Flags.Options(); err != nil {
			return err
		}
		// The Manager builds env.Client and env.Dynamic from cfg, so they are its own: after an
		// outage it closes their connections, dead ones included (manager/connections.go).
		cfg := mopts.Config
		if s.Shard.Sharded() {
			if meta, err = sharding.NewRingClient(cfg, s.Shard); err != nil {
				return err
			}
			if leases, err = sharding.NewLeaseClient(cfg, s.Shard); err != nil {
				return err
			}
		}
		logger.Info("Running against a cluster", "host", cfg.Host)
	} else {
		var opts fakecluster.Options
		if p.Cluster != nil {
			var err error
			if opts, err = p.Cluster(); err != nil {
				return err
			}
		}
		// The Lease's namespace, as the deploy manifests create it: outside a Pod the
		// Manager checks that it exists.
		leaseNS := cmp.Or(s.LeaderElection.Namespace, leaderelection.DefaultLeaseNamespace())
		if !slices.ContainsFunc(opts.Objects, func(o runtime.Object) bool {
			ns, ok := o.(*corev1.Namespace)
			return ok && ns.Name == leaseNS
		}) {
			opts.Objects = append(opts.Objects, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNS}})
		}
		cluster, err := fakecluster.NewWithOptions(opts)
		if err != nil {
			return err
		}
		env.Client, env.Dynamic = cluster.Clientset(), cluster.Dynamic()
		logger.Info("Running the demo on an in-memory cluster")
		// What Flags.Options says but the cluster, which is in memory.
		var cache informer.Options
		_ = s.CacheMemoryBudget.Apply(&cache) // checked by Parse
		mopts = manager.Options{
			Cache:           cache,
			LeaderElection:  &s.LeaderElection,
			MetricsAddr:     s.MetricsAddr,
			HealthProbeAddr: s.HealthProbeAddr,
			MetricsServing:  manager.MetricsServingOptions{EnableProfiling: s.Profiling},
		}
	}
	mopts.Client, mopts.Dynamic = env.Client, env.Dynamic // nil against a cluster: built from mopts.Config
	mopts.Logger = klog.Logger{}                          // Start's context's: the demo's, writing to out
	mopts.Scheme = p.Scheme
	// The Manager's factory gets the Manager's dynamic client; the ring's factory gets it too.
	cache := mopts.Cache // the budget flags
	cache.Logger = logger
	if env.Dynamic != nil {
		cache.DynamicClient = env.Dynamic
	}
	if p.Cache != nil {
		p.Cache(&cache)
	}
	mopts.Cache = cache
	if env.InMemory && s.MetricsAddr != "" {
		logger.Info("Serving /metrics over plain HTTP to anyone: the in-memory cluster cannot review tokens (--metrics-secure needs --kubeconfig)")
	}
	if len(p.Features) > 0 || p.Sharding != nil {
		mopts.FeatureGate = s.Gate
	}
	if env.Sharded {
		shard := s.Shard
		if s.Gate.Enabled(ShardedListAndWatch) {
			// Falls back to labels, saying so, when the API server does not
			// serve shard selectors (manager.Manager.ShardMode).
			shard.Mode = sharding.ModeServer
		}
		mopts.Sharding = &manager.ShardingOptions{
			Config:            shard,
			Sharder:           sharding.SharderOptions{Resource: p.Sharding.Resource, Children: p.Sharding.Children},
			Metadata:          meta,
			Leases:            leases,
			Cache:             cache,
			AssignAtAdmission: s.ShardWebhookAddr != "",
		}
		logger.Info("Sharded: this replica reconciles the objects the ring assigns it", "ring", s.Shard.Ring,
			"identity", s.Shard.Identity, "leaseNamespace", s.Shard.WithDefaults().Namespace)
	}
	mgr, err := manager.New(mopts)
	if err != nil {
		return err
	}
	env.Manager = mgr
	env.Client, env.Dynamic = mgr.Client(), mgr.Dynamic()
	if s.ShardWebhookAddr != "" {
		if err := serveShardWebhook(p, s, mgr); err != nil {
			return err
		}
	}
	if err := p.Setup(ctx, env); err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil // interrupted while Setup waited for the API server
		}
		return err
	}
	if !env.InMemory {
		if p.RealClusterHint != "" {
			logger.Info(p.RealClusterHint)
		}
		return mgr.Start(ctx) // until interrupted, or a fatal error
	}
	return runInMemory(ctx, p, s, env)
}

// runInMemory runs the Manager (and a simulated kubelet) next to the scripted demo, and stops
// them when the demo ends (or, with --watch, when interrupted).
func runInMemory(ctx context.Context, p Program, s *Settings, env *Env) error {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	kubeletDone := make(chan error, 1)
	if p.Kubelet != nil {
		k, err := kubelet.New(env.Client, *p.Kubelet)
		if err != nil {
			return err
		}
		go func() { kubeletDone <- k.Run(ctx) }()
	} else {
		kubeletDone <- nil
	}
	mgrDone := make(chan error, 1)
	go func() {
		mgrDone <- env.Manager.Start(ctx)
		cancel() // a Manager that failed ends the demo too
	}()
	demoErr := p.Demo(ctx, env)
	if demoErr == nil && s.Watch {
		logger.Info("Demo done; watching until interrupted (Ctrl-C)", "metrics", env.Manager.MetricsAddr(), "health", env.Manager.HealthProbeAddr())
		<-ctx.Done()
	}
	cancel()
	mgrErr, kubeletErr := <-mgrDone, <-kubeletDone
	if mgrErr != nil && errors.Is(demoErr, context.Canceled) {
		// The demo only saw its context end because the Manager failed: the Manager's error
		// is the cause, and the only one worth reporting.
		demoErr = nil
	}
	return errors.Join(mgrErr, demoErr, kubeletErr)
}

// ShardWebhookPath is where --shard-webhook-addr serves the ring's assignment webhook.
const ShardWebhookPath = "/shard-assign"

// serveShardWebhook serves the ring's admission-time assignment on the Manager's webhook server.
func serveShardWebhook(p Program, s *Settings, mgr *manager.Manager) error {
	srv, err := webhook.NewServer(webhook.ServerOptions{Addr: s.ShardWebhookAddr, CertDir: s.ShardWebhookCertDir, Registerer: mgr.Registerer()})
	if err != nil {
		return fmt.Errorf("--shard-webhook-addr: %w", err)
	}
	h, err := webhook.NewShardAssigning(p.Sharding.Kind, mgr.ShardAssigner())
	if err != nil {
		return err
	}
	if err := srv.Register(ShardWebhookPath, h); err != nil {
		return err
	}
	return webhook.AddToManager(mgr, srv)
}
