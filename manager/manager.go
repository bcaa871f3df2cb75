package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/featuregate"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/leaderelection"
	"github.com/ctrlkit/ctrlkit/manager/internal/clientgometrics"
	"github.com/ctrlkit/ctrlkit/manager/internal/delegatedauth"
	eventpipes "github.com/ctrlkit/ctrlkit/manager/internal/events"
	"github.com/ctrlkit/ctrlkit/manager/internal/serving"
	"github.com/ctrlkit/ctrlkit/sharding"
)

// Runnable is what a Manager runs: every *controller.Controller[K] is one,
// whatever its K, and so can be anything else with a lifetime (a cache
// warmer, a periodic job, a webhook server).
//
// A Runnable may also implement LeaderElectionRunnable (without it, it runs
// only on the leader, as every kube-controller-manager controller does),
// GatedRunnable (to sit behind a feature gate) and HasSynced() bool (to be
// part of /readyz once started).
type Runnable interface {
	// Name must be unique within a Manager; it names the Runnable in logs
	// and errors.
	Name() string
	// Run blocks until ctx ends (then returns nil after finishing in-flight
	// work) or fails; an error is fatal for the Manager. ctx carries the
	// Manager's logger and metrics (controller.MetricsFrom).
	Run(ctx context.Context) error
}

// LeaderElectionRunnable is a Runnable that says whether it may run only
// while this process leads. Runnables without the method need leader
// election (controller-runtime's rule too).
type LeaderElectionRunnable interface {
	NeedLeaderElection() bool
}

// GatedRunnable is a Runnable behind a feature gate: the Manager starts it
// only when Options.FeatureGate says Feature() is enabled. "" means no gate.
type GatedRunnable interface {
	Feature() featuregate.Feature
}

var (
	_ Runnable               = (*controller.Controller[controller.Key])(nil)
	_ LeaderElectionRunnable = (*controller.Controller[controller.Key])(nil)
	_ GatedRunnable          = (*controller.Controller[controller.Key])(nil)
)

// informerEventSource is the event source of what the Manager's own factory
// records (undecodable custom resources).
const informerEventSource = "ctrlkit-informer"

// ErrDuplicateName is returned by Add for a Runnable whose name is already
// taken in that Manager.
var ErrDuplicateName = errors.New("duplicate runnable name")

func needsLeader(r Runnable) bool {
	if l, ok := r.(LeaderElectionRunnable); ok {
		return l.NeedLeaderElection()
	}
	return true
}

func featureOf(r Runnable) featuregate.Feature {
	if g, ok := r.(GatedRunnable); ok {
		return g.Feature()
	}
	return ""
}

// Options configure a Manager. Only Client is required.
type Options struct {
	// Client is the clientset of the informer factory (unless Factory is
	// set), the Lease and the events. nil means one built from Config.
	Client kubernetes.Interface
	// Config is the API server to talk to when Client is nil. nil means
	// GetConfig's: $KUBECONFIG, ~/.kube/config, then in-cluster, as kubectl
	// finds it. Tests pass Client (testkit's), so they never reach a
	// cluster by accident.
	Config *rest.Config

	// Factory is the informer factory the Manager owns: it starts it, waits
	// for its caches for /readyz, and shuts it down after the controllers
	// stopped. nil means the Manager builds one on Client with
	// FactoryOptions, recording events about undecodable custom resources
	// through the Manager (informer.WithEventRecorder) and reporting
	// client-go's informer metrics under the name "ctrlkit-manager-<n>",
	// n counting the Managers of the process from 1
	// (informer.WithInformerName). A Factory of your own reports them only
	// with a name of its own, and its informers report their store only
	// when taken after the process's first New (which hooks client-go's
	// metrics in).
	Factory *informer.Factory

	// FactoryOptions configure the factory the Manager builds when Factory
	// is nil (for example informer.WithDynamicClient for custom resources,
	// informer.WithNamespace, informer.WithInformerName to replace the
	// default name, "" for none). Setting both is an error.
	FactoryOptions []informer.FactoryOption

	// LeaderElection, when non-nil with Enabled true (the --leader-elect
	// flag), makes the Manager contend for a Lease: Runnables that need
	// leader election run only while this process leads, everything else
	// (other Runnables, the informer caches) runs on every replica so
	// standbys are warm. Set ReleaseOnCancel to hand the Lease over at once
	// on shutdown; the Manager releases it only after every controller
	// stopped. /readyz gets a check "leaderelection" that fails while this
	// replica cannot read or write the Lease (leaderelection's
	// Elector.ReadyCheck: a standby that reads it is ready). nil or Enabled
	// false means no election: everything runs.
	LeaderElection *leaderelection.Config

	// ExitOnLeaseLoss makes a lost Lease fatal, as in kube-controller-manager
	// and controller-runtime: Start stops everything and returns an error
	// matching leaderelection.ErrLeaseLost, and the caller exits. By default
	// (false) a lost Lease stops only the Runnables that need leader
	// election, waits for them (up to GracefulShutdownTimeout and at most
	// LeaseDuration - RenewDeadline; past it the loss is fatal after all) and
	// contends for the Lease again, Running them anew when it wins; webhooks,
	// probes, metrics, informers and the Runnables that need no election keep
	// serving throughout. A controller.Controller runs again as a fresh term;
	// a Runnable of your own that needs leader election is run again only if
	// it is a RestartableRunnable, else the loss is fatal.
	ExitOnLeaseLoss bool

	// Sharding, when non-nil, makes this replica a member of a ring
	// (package sharding): the replicas of the binary split the objects of
	// the controllers added with AddSharded, and their caches, instead of
	// one replica doing all the work. New validates it (the ring's name,
	// identity and durations) and builds the member, the sharder and
	// ShardFactory; Start first asks the API server whether the ring has
	// every permission it needs (sharding.CheckAccess) and refuses to start
	// without, naming the missing one. The ring runs as one Runnable named
	// "shard-<ring>" on every replica, with a /readyz check of the same name
	// and the ctrlkit_shard_* series on Registerer. With LeaderElection
	// enabled too, sharded controllers still run on every member (the ring,
	// not the election, says which objects are whose), while the other
	// Runnables that need leader election run only on the leader.
	Sharding *ShardingOptions

	// FeatureGate decides whether Runnables with a Feature start. A
	// Runnable whose gate is off is not started, and the log says so.
	// Adding a Runnable with a Feature to a Manager without a FeatureGate
	// is an error. A *featuregate.Gate is also exported on /metrics as
	// kubernetes_feature_enabled{name,stage}.
	FeatureGate featuregate.Gates

	// HealthProbeAddr is where /healthz and /readyz are served, e.g.
	// ":8081". Empty means not served (HealthzHandler and ReadyzHandler
	// still work, for httptest).
	HealthProbeAddr string
	// MetricsAddr is where /metrics is served, e.g. ":8080". Empty means
	// not served (MetricsHandler still works). It may equal
	// HealthProbeAddr: then one server serves all three paths (not with
	// MetricsServing.SecureServing).
	MetricsAddr string
	// MetricsServing configures the server of MetricsAddr: HTTPS with
	// authentication and authorization through the API server, the
	// certificate, pprof. The zero value serves plain HTTP to anyone.
	MetricsServing MetricsServingOptions

	// Registerer receives the controller and queue metrics, and client-go's
	// REST client and leader election series (see the package doc). nil means a
	// private registry of the Manager (with Go and process collectors);
	// Prometheus' global default registry is never used implicitly.
	Registerer prometheus.Registerer
	// Gatherer is what /metrics serves. nil means Registerer when it is also
	// a Gatherer (a *prometheus.Registry is), else it is an error.
	Gatherer prometheus.Gatherer

	// Scheme resolves the kinds of objects events are about. nil means
	// client-go's scheme (built-in types); add your custom types to a scheme
	// of your own and pass it to record events about them.
	Scheme *runtime.Scheme

	// Logger overrides the logger taken from Start's context.
	Logger klog.Logger

	// CacheSyncTimeout, when > 0, makes Start fail (with an error matching
	// informer.ErrCacheSyncTimeout)
	// when the factory's caches have not synced this long after Start. 0
	// means wait as long as it takes (/readyz fails meanwhile).
	CacheSyncTimeout time.Duration

	// APIServerProbeInterval is how often the Manager asks the API server
	// for /readyz, each ask bounded by the interval, to log an outage when
	// it begins ("The API server does not answer"), every 30 s while it
	// lasts, and when it ends. 0 means the leader election's RetryPeriod
	// (2 s by default) or, without election, leaderelection.DefaultRetryPeriod;
	// negative means no probe.
	APIServerProbeInterval time.Duration

	// GracefulShutdownTimeout bounds how long Start waits, once ctx ended or
	// a fatal error occurred, for the Runnables to return from Run (a
	// controller waits for its in-flight Reconciles). After it, Start logs
	// each Runnable still running as abandoned and returns an error
	// matching ErrShutdownTimeout (a *ShutdownTimeoutError naming them). The
	// Lease is then not released while a Runnable that needs leader
	// election may still act: it expires by itself after LeaseDuration.
	// The informers, events and HTTP servers are stopped all the same.
	// 0 means DefaultGracefulShutdownTimeout (30 s, as in
	// controller-runtime); a negative value means no deadline. Unlike
	// controller-runtime's *time.Duration, 0 does not mean "do not wait".
	GracefulShutdownTimeout time.Duration
}

// Manager runs a set of controllers over one shared informer factory, behind
// optional leader election and feature gates, serves health probes and
// metrics, records events, and shuts everything down in order. Build it with
// New, Add controllers, then Start.
type Manager struct {
	client      kubernetes.Interface
	factory     *informer.Factory
	gate        featuregate.Gates
	elector     *leaderelection.Elector
	shard       *shardState // nil without Options.Sharding
	metrics     *controller.Metrics
	gatherer    prometheus.Gatherer
	registerer  prometheus.Registerer
	scheme      *runtime.Scheme
	optLogger   klog.Logger
	logger      atomic.Pointer[klog.Logger] // set by Start; nil before
	healthAddr  string
	metricsAddr string
	serving     MetricsServingOptions // defaults filled
	auth        *delegatedauth.Filter // nil unless serving.SecureServing
	timeouts    serving.Timeouts      // of every server; tests shorten them
	certClock   clock.WithTicker      // of the metrics certificate's watcher; nil: real, tests step it
	syncTimeout time.Duration
	// shutdownTimeout is Options.GracefulShutdownTimeout, defaulted; < 0
	// means none.
	shutdownTimeout time.Duration
	exitOnLoss      bool          // Options.ExitOnLeaseLoss
	probeEvery      time.Duration // Options.APIServerProbeInterval, defaulted; < 0: none
	clock           clock.Clock

	mu        sync.Mutex
	runnables []Runnable
	names     map[string]struct{}
	started   bool
	stopping  bool // shutdown began: a late OnStartedLeading starts nothing
	ctrlCtx   context.Context
	leaders   []Runnable
	live      map[*Runnable]struct{} // Run called and not returned: the /readyz set
	fatal     chan error
	runWG     sync.WaitGroup // every Runnable.Run
	events    *eventpipes.Recorders
	servers   *serving.Servers // set by Start once listening

	healthz []namedCheck // AddHealthzCheck's, fixed once started
	readyz  []namedCheck // AddReadyzCheck's, fixed once started

	running      atomic.Bool
	cachesSynced atomic.Bool
}

// New validates opts and builds a Manager. Errors match ErrInvalidOptions
// (an *OptionsError naming the field), or are the leader election's or the
// ring's configuration's own (matching leaderelection.ErrInvalidConfig or
// sharding.ErrInvalidConfig).
func New(opts Options) (_ *Manager, err error) {
	// Before anything of the Manager makes a request: client-go reads its
	// hooks without a lock.
	clientgometrics.Install()
	bad := func(field, reason string) (*Manager, error) {
		return nil, &OptionsError{Field: "manager.Options." + field, Reason: reason}
	}
	if opts.Client != nil && opts.Config != nil {
		return bad("Config", "set together with Client; Config is only for building the Client")
	}
	var restCfg *rest.Config // the Config the Client was built from, if it was
	if opts.Client == nil {
		cfg := opts.Config
		if cfg == nil {
			var err error
			if cfg, err = GetConfig(); err != nil {
				return nil, fmt.Errorf("manager: no Client or Config: %w", err)
			}
		}
		restCfg = cfg
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("manager: client for %s: %w", cfg.Host, err)
		}
		opts.Client = cs
	}
	if opts.Factory != nil && len(opts.FactoryOptions) > 0 {
		return bad("FactoryOptions", "set together with Factory; they configure the factory the Manager builds when Factory is nil")
	}
	if opts.CacheSyncTimeout < 0 {
		return bad("CacheSyncTimeout", fmt.Sprintf("%v is negative", opts.CacheSyncTimeout))
	}
	metricsServing := opts.MetricsServing
	if field, reason := metricsServing.validate(opts.MetricsAddr, opts.HealthProbeAddr); field != "" {
		return bad("MetricsServing."+field, reason)
	}
	m := &Manager{
		serving:     metricsServing,
		timeouts:    serving.DefaultTimeouts,
		client:      opts.Client,
		factory:     opts.Factory,
		gate:        opts.FeatureGate,
		scheme:      opts.Scheme,
		optLogger:   opts.Logger,
		healthAddr:  opts.HealthProbeAddr,
		metricsAddr: opts.MetricsAddr,
		syncTimeout: opts.CacheSyncTimeout,
		names:       map[string]struct{}{},
		live:        map[*Runnable]struct{}{},

		shutdownTimeout: gracefulShutdownTimeout(opts.GracefulShutdownTimeout),
		exitOnLoss:      opts.ExitOnLeaseLoss,
		clock:           clock.RealClock{},
	}
	if m.scheme == nil {
		m.scheme = scheme.Scheme
	}
	m.events = eventpipes.New(m.client, m.scheme, m.log)
	if m.factory == nil {
		fopts := append([]informer.FactoryOption{
			informer.WithEventRecorder(m.EventRecorderFor(informerEventSource)),
			informer.WithInformerName(managerInformerName()),
		}, opts.FactoryOptions...)
		m.factory = informer.NewFactory(opts.Client, fopts...)
		// Nobody shuts down the factory of a Manager New does not return:
		// release its informer name now, so a retry can take it.
		defer func() {
			if err != nil {
				m.factory.Shutdown()
			}
		}()
	}
	if metricsServing.SecureServing {
		m.auth = delegatedauth.New(opts.Client, delegatedauth.Options{
			AllowTTL: metricsServing.AllowCacheTTL, DenyTTL: metricsServing.DenyCacheTTL, Log: m.log,
		})
	}

	reg, gath := opts.Registerer, opts.Gatherer
	if reg == nil {
		r := prometheus.NewRegistry()
		r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		reg = r
		if gath == nil {
			gath = r
		}
	}
	if gath == nil {
		g, ok := reg.(prometheus.Gatherer)
		if !ok {
			return bad("Gatherer", fmt.Sprintf("nil, and Registerer %T is not a prometheus.Gatherer", reg))
		}
		gath = g
	}
	metrics, err := controller.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	if err := clientgometrics.Register(reg); err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	if g, ok := opts.FeatureGate.(*featuregate.Gate); ok && g != nil {
		// kubernetes_feature_enabled{name,stage}, as every Kubernetes component exports it.
		// Registered already (by the caller, on a shared registry) is what we want.
		if err := featuregate.RegisterMetrics(reg, g); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
			return nil, fmt.Errorf("manager: feature gate metrics: %w", err)
		}
	}
	m.metrics, m.gatherer = metrics, gath
	m.registerer = reg

	if opts.Sharding != nil {
		if m.shard, err = m.newShardState(*opts.Sharding, restCfg); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				m.shard.factory.Shutdown()
			}
		}()
		m.names[m.shard.name] = struct{}{}
		if !opts.Sharding.NoReadyzCheck {
			if err := m.AddReadyzCheck(m.shard.name, m.shard.check); err != nil {
				return nil, err
			}
		}
	}

	if le := opts.LeaderElection; le != nil && le.Enabled {
		e, err := leaderelection.NewElector(opts.Client, *le, leaderelection.Callbacks{
			OnStartedLeading: m.onStartedLeading,
			OnNewLeader: func(id string) {
				m.log().Info("New leader observed", "leader", id)
			},
		})
		if err != nil {
			return nil, fmt.Errorf("manager leader election: %w", err)
		}
		m.elector = e
		if err := m.addElectionReadyzCheck(); err != nil {
			return nil, err
		}
	}
	retry := leaderelection.DefaultRetryPeriod
	if m.elector != nil {
		retry = m.elector.Config().RetryPeriod
	}
	m.probeEvery = probeInterval(opts.APIServerProbeInterval, retry)
	return m, nil
}

// Add registers controllers (any Runnable). Names must be unique within the
// Manager (ErrDuplicateName); a GatedRunnable with a Feature needs
// Options.FeatureGate; nothing can be added once Start was called. A
// Controller built without controller.Options.Metrics reports into the
// Manager's registry: Start runs it with controller.WithMetrics.
func (m *Manager) Add(rs ...Runnable) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return fmt.Errorf("manager: adding controllers: %w", controller.ErrAlreadyStarted)
	}
	seen := map[string]struct{}{}
	for i, r := range rs {
		if r == nil {
			return &OptionsError{Field: "Manager.Add", Reason: fmt.Sprintf("controller %d is nil", i)}
		}
		name := r.Name()
		if _, dup := m.names[name]; dup {
			return fmt.Errorf("manager: %w %q", ErrDuplicateName, name)
		}
		if _, dup := seen[name]; dup {
			return fmt.Errorf("manager: %w %q", ErrDuplicateName, name)
		}
		seen[name] = struct{}{}
		if f := featureOf(r); f != "" && m.gate == nil {
			return &OptionsError{Runnable: name, Field: "Feature",
				Reason: fmt.Sprintf("%q is set but manager.Options.FeatureGate is nil", f)}
		}
	}
	for _, r := range rs {
		m.names[r.Name()] = struct{}{}
		m.runnables = append(m.runnables, r)
	}
	return nil
}

// log is the logger Start chose, klog.Background() before Start.
func (m *Manager) log() klog.Logger {
	if l := m.logger.Load(); l != nil {
		return *l
	}
	return klog.Background()
}

// Factory returns the informer factory the Manager owns. Take informers from
// it (informer.For[T](mgr.Factory())) before Start.
func (m *Manager) Factory() *informer.Factory { return m.factory }

// Client returns Options.Client.
func (m *Manager) Client() kubernetes.Interface { return m.client }

// Metrics returns the Manager's metrics, for controllers built to report
// into its registry explicitly (controller.Options.Metrics) and for queues
// built by hand (it is a client-go workqueue.MetricsProvider).
func (m *Manager) Metrics() *controller.Metrics { return m.metrics }

// Registerer returns the registry the Manager's metrics are registered on
// (Options.Registerer, or the Manager's private registry), for components that
// report next to them, such as a webhook server.
func (m *Manager) Registerer() prometheus.Registerer { return m.registerer }

// Gatherer returns what /metrics serves.
func (m *Manager) Gatherer() prometheus.Gatherer { return m.gatherer }

// Elector returns the leader elector, nil without leader election.
func (m *Manager) Elector() *leaderelection.Elector { return m.elector }

// HealthProbeAddr returns the address /healthz and /readyz are served on
// once Start has listened ("" before, or when not served): with
// HealthProbeAddr "127.0.0.1:0" it names the port picked.
func (m *Manager) HealthProbeAddr() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.servers.Addr("health")
}

// MetricsAddr returns the address /metrics is served on once Start has
// listened ("" before, or when not served).
func (m *Manager) MetricsAddr() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.servers.Addr("metrics")
}

// Start runs everything until ctx ends or something fatal happens, then shuts
// down in order and returns:
//
//  1. serve the probes and metrics, start recording events, start the
//     informers;
//  2. start the controllers that do not need leader election (all of them
//     without an election), and contend for the Lease; on winning, start the
//     others;
//  3. on ctx's end or the first fatal error: stop the controllers (each
//     stops taking keys and waits for its in-flight Reconciles) and wait
//     for them up to Options.GracefulShutdownTimeout, stop the informers,
//     end the election (releasing the Lease with ReleaseOnCancel, unless
//     a controller that needs leader election is still running), stop
//     events and the HTTP servers.
//
// A lost Lease stops the Runnables that need leader election and starts
// the campaign again; everything else keeps running (see
// Options.ExitOnLeaseLoss for kube-controller-manager's exit instead).
//
// It returns nil after a cancelled ctx, or the first fatal error: a
// Runnable's Run error, a cache sync timeout (matching
// informer.ErrCacheSyncTimeout), or, with ExitOnLeaseLoss,
// leaderelection.ErrLeaseLost (wrapped) when the lease was lost — the
// caller exits, as kube-controller-manager does, instead of this package
// calling os.Exit.
// Runnables still running after the graceful shutdown timeout are
// abandoned, each logged, and the error (joined to a fatal one, if any)
// matches ErrShutdownTimeout; a *ShutdownTimeoutError names them. The
// process should exit then: they may still be acting. A Manager starts
// once.
func (m *Manager) Start(ctx context.Context) error {
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		return fmt.Errorf("manager: %w", controller.ErrAlreadyStarted)
	}
	m.started = true
	rs := slices.Clone(m.runnables)
	m.mu.Unlock()

	logger := m.optLogger
	if logger.GetSink() == nil {
		logger = klog.FromContext(ctx)
	}
	m.logger.Store(&logger)
	ctx = controller.WithMetrics(klog.NewContext(ctx, logger), m.metrics)
	if s := m.shard; s != nil && !s.opts.SkipAccessCheck {
		// Before anything starts: a missing permission would otherwise show
		// only as writes failing one by one and keys that never move.
		if err := sharding.CheckAccess(ctx, m.client, s.cfg, s.opts.Sharder); err != nil {
			return fmt.Errorf("manager: %w", err)
		}
	}
	// Each stage below is stopped explicitly, in order, so none of them
	// inherits ctx's cancellation.
	base := context.WithoutCancel(ctx)

	enabled := func(r Runnable) bool {
		if f := featureOf(r); f != "" && !m.gate.Enabled(f) {
			logger.Info("Not starting controller: its feature gate is disabled", "controller", r.Name(), "feature", f)
			return false
		}
		return true
	}
	if m.shard != nil {
		group, err := m.shardGroup(enabled)
		if err != nil {
			return fmt.Errorf("manager: %w", err)
		}
		rs = append(rs, group)
	}
	servers, err := m.listen(logger)
	if err != nil {
		return err
	}
	m.events.Start(logger, m.identity())
	m.factory.Start(base)
	probeCtx, stopProbe := context.WithCancel(base)
	var probe sync.WaitGroup
	defer probe.Wait()
	defer stopProbe()
	if m.probeEvery > 0 {
		probe.Go(func() { m.probeAPIServer(probeCtx, m.probeEvery) })
	}

	var always, leaders, active []Runnable
	for _, r := range rs {
		if !enabled(r) {
			continue
		}
		active = append(active, r)
		if m.elector != nil && needsLeader(r) {
			leaders = append(leaders, r)
		} else {
			always = append(always, r)
		}
	}
	ctrlCtx, stopControllers := context.WithCancel(base)
	defer stopControllers()
	fatal := make(chan error, len(rs)+1)
	m.mu.Lock()
	m.ctrlCtx, m.leaders, m.fatal = ctrlCtx, leaders, fatal
	m.mu.Unlock()

	syncDone := make(chan struct{})
	go func() {
		defer close(syncDone)
		m.waitForCaches(ctrlCtx)
	}()

	m.mu.Lock()
	for _, r := range always {
		m.goRunLocked(ctrlCtx, r, nil)
	}
	m.mu.Unlock()

	var electorDone chan error
	electionCtx, endElection := context.WithCancel(base)
	defer endElection()
	if m.elector != nil {
		logger.Info("Contending for leadership", "identity", m.elector.Identity(),
			"controllers", len(leaders), "controllersOnEveryReplica", len(always))
		electorDone = make(chan error, 1)
		go func() { electorDone <- m.campaign(electionCtx) }()
	}
	m.running.Store(true)
	logger.Info("Manager started", "controllers", len(active))

	var first error
	select {
	case <-ctx.Done():
		logger.Info("Shutting down")
	case first = <-fatal:
	case first = <-electorDone:
		electorDone = nil
		if first == nil { // cannot happen while electionCtx lives; be safe
			first = errors.New("manager: leader election ended unexpectedly")
		}
	}
	if first != nil {
		logger.Error(first, "Shutting down after a fatal error")
	}
	m.running.Store(false)

	// 1-3: stop intake, drain, stop controllers (leaders included).
	m.mu.Lock()
	m.stopping = true
	m.mu.Unlock()
	stopControllers()
	stopProbe()
	logger.Info("Waiting for the controllers to finish their in-flight reconciles", "timeout", m.shutdownTimeout)
	stuck := m.waitForRunnables(logger)
	<-syncDone
	// 4: stop informers.
	m.factory.Shutdown()
	m.cachesSynced.Store(false)
	// 5: release the lease. The elector stops renewing it either way. With
	// leader work abandoned, its OnStartedLeading (onStartedLeading) has not
	// returned: leaderelection's release waits for it up to RenewDeadline,
	// then leaves the Lease to expire, and Run returns only after it — so
	// it is not waited for here.
	wasLeading := m.elector != nil && m.elector.IsLeader()
	endElection()
	if electorDone != nil {
		if m.leaderWorkAbandoned(stuck) {
			logger.Info("Not releasing the lease while abandoned controllers that need leader election run; it expires after its lease duration",
				"lease", m.leaseName(), "leaseDuration", m.elector.Config().LeaseDuration)
		} else {
			if wasLeading && m.elector.Config().ReleaseOnCancel {
				logger.Info("Releasing the lease", "lease", m.leaseName(), "timeout", m.elector.ReleaseTimeout())
			}
			if err := <-electorDone; err != nil && first == nil {
				first = err
			}
		}
	}
	m.events.Stop()
	servers.Shutdown(logger)
	// Later fatal errors are logged; the first one is returned.
	for len(fatal) > 0 {
		if err := <-fatal; err != first {
			logger.Error(err, "Another error during shutdown")
		}
	}
	logger.Info("Manager stopped")
	if err := m.shutdownTimeoutError(stuck); err != nil {
		if first == nil {
			return err
		}
		return errors.Join(first, err)
	}
	return first
}

// waitForCaches marks the Manager's caches synced, or reports a timeout.
func (m *Manager) waitForCaches(ctx context.Context) {
	if m.syncTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.syncTimeout)
		defer cancel()
	}
	if err := m.factory.WaitForCacheSync(ctx); err != nil {
		if m.syncTimeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			m.reportFatal(fmt.Errorf("manager: %w", err))
		}
		return
	}
	m.cachesSynced.Store(true)
	m.log().V(2).Info("Caches synced")
}

// goRunLocked runs r in its own goroutine, counted in runWG (and in wg when
// not nil) and listed in live while it runs. m.mu is held, so that shutdown
// (which sets stopping under m.mu before runWG.Wait) never races with the
// Add.
func (m *Manager) goRunLocked(ctx context.Context, r Runnable, wg *sync.WaitGroup) {
	m.runWG.Add(1)
	if wg != nil {
		wg.Add(1)
	}
	// Keyed by a fresh pointer: a Runnable's dynamic type need not be
	// comparable.
	key := &r
	m.live[key] = struct{}{}
	go func() {
		defer m.runWG.Done()
		if wg != nil {
			defer wg.Done()
		}
		err := r.Run(ctx)
		m.mu.Lock()
		delete(m.live, key)
		m.mu.Unlock()
		switch {
		case err != nil && errors.Is(err, context.Canceled) && ctx.Err() != nil:
			// It returned its ctx's error: stopped as asked (shutdown, or a lost Lease).
			m.log().V(2).Info("Runnable stopped with its context", "controller", r.Name())
		case err != nil:
			m.reportFatal(fmt.Errorf("controller %q: %w", r.Name(), err))
		}
	}()
}

// managerSeq numbers the factories Managers build, for their names.
var managerSeq atomic.Int64

// managerInformerName is the informer name of the next factory a Manager
// builds: "ctrlkit-manager-1" for the first of the process, so a binary
// with one Manager always exports the same name.
func managerInformerName() string {
	return fmt.Sprintf("ctrlkit-manager-%d", managerSeq.Add(1))
}
