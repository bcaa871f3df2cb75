package manager

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/connrotation"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/featuregate"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/builtin"
	"github.com/ctrlkit/ctrlkit/internal/clientgometrics"
	"github.com/ctrlkit/ctrlkit/leaderelection"
	"github.com/ctrlkit/ctrlkit/manager/internal/delegatedauth"
	eventpipes "github.com/ctrlkit/ctrlkit/manager/internal/events"
	"github.com/ctrlkit/ctrlkit/manager/internal/serving"
)

// Manager runs a set of controllers over one shared informer factory, behind
// optional leader election and feature gates, serves health probes and
// metrics, records events, and shuts everything down in order. Build it with
// New, Add controllers, then Start.
type Manager struct {
	// Set by New, then fixed.
	client    kubernetes.Interface
	dynamic   dynamic.Interface // nil when Options gave Client without Dynamic
	factory   *informer.Factory
	gate      featuregate.Gates
	elector   *leaderelection.Elector // nil without leader election
	shard     *shardState             // nil without Options.Sharding
	scheme    *runtime.Scheme
	events    *eventpipes.Recorders
	clock     clock.Clock
	optLogger klog.Logger
	logger    atomic.Pointer[klog.Logger] // set by Start; nil before

	// Metrics (metrics.go).
	metrics    *controller.Metrics
	gatherer   prometheus.Gatherer
	registerer prometheus.Registerer

	// Serving (serving.go).
	healthAddr  string
	metricsAddr string
	serving     MetricsServingOptions // defaults filled
	auth        *delegatedauth.Filter // nil unless serving.SecureServing
	timeouts    serving.Timeouts      // of every server; tests shorten them
	certClock   clock.WithTicker      // of the metrics certificate's watcher; nil: real, tests step it

	// Lifecycle timings.
	syncTimeout time.Duration
	// shutdownTimeout is Options.GracefulShutdownTimeout, defaulted; < 0
	// means none.
	shutdownTimeout time.Duration
	exitOnLoss      bool // Options.ExitOnLeaseLoss
	// leaseNamespaceDefaulted: the election's Lease namespace was not set and the process
	// runs outside a Pod, so Start checks that it exists (preflight).
	leaseNamespaceDefaulted bool
	probeEvery              time.Duration // Options.APIServerProbeInterval, defaulted; < 0: none
	// conns dials the clients the Manager built from a Config, nil otherwise; probeHTTP and
	// probeConns are the probe's own (connections.go).
	conns      *connrotation.Dialer
	probeHTTP  *http.Client
	probeConns *connrotation.Dialer

	mu       sync.Mutex
	always   *group // the Runnables every replica runs, started by Start
	leaders  *group // those that need leader election, started in each term
	names    map[string]struct{}
	started  bool
	stopping bool // shutdown began: a late OnStartedLeading starts nothing
	ctrlCtx  context.Context
	runs     map[string]*running           // the Run in progress of each Runnable, by name (Remove)
	live     map[*Runnable]context.Context // Run called and not returned, with its ctx: the /readyz set
	fatal    chan error
	runWG    sync.WaitGroup   // every Runnable.Run
	servers  *serving.Servers // set by Start once listening
	healthz  []namedCheck     // AddHealthzCheck's, fixed once started
	readyz   []namedCheck     // AddReadyzCheck's, fixed once started

	running      atomic.Bool
	cachesSynced atomic.Bool
	// wasReady is set once /readyz first passed: from then on a controller (re)starting on the
	// warm caches (a leader-only one after a re-election) does not fail readiness.
	wasReady atomic.Bool
	// beenReady is set by the first /readyz that passes once a holder of the
	// Lease was seen, or the first term this process leads: from then on a
	// Lease error no longer fails /readyz (leaseCheck).
	beenReady atomic.Bool
	// apiDown is set while the API server probe sees an outage: a shutdown
	// then cancels the reconciles in flight at once (shutdownCause).
	apiDown atomic.Bool
}

// informerEventSource is the event source of what the Manager's own factory
// records (undecodable custom resources).
const informerEventSource = "ctrlkit-informer"

// New validates opts and builds a Manager. Errors match ErrInvalidOptions
// (an *OptionsError naming the field), or are the leader election's or the
// ring's configuration's own (matching leaderelection.ErrInvalidConfig or
// sharding.ErrInvalidConfig). The process's first New hooks client-go's
// metrics in (see the package doc): build the first Manager before other
// goroutines make requests.
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
	restCfg, conns, err := clientFor(&opts)
	if err != nil {
		return nil, err
	}
	if opts.Factory != nil && !reflect.ValueOf(opts.Cache).IsZero() {
		return bad("Cache", "set together with Factory; it configures the factory the Manager builds when Factory is nil")
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
		dynamic:     opts.Dynamic,
		factory:     opts.Factory,
		gate:        opts.FeatureGate,
		scheme:      opts.Scheme,
		optLogger:   opts.Logger,
		healthAddr:  opts.HealthProbeAddr,
		metricsAddr: opts.MetricsAddr,
		syncTimeout: opts.CacheSyncTimeout,
		names:       map[string]struct{}{},
		live:        map[*Runnable]context.Context{},
		runs:        map[string]*running{},

		shutdownTimeout: gracefulShutdownTimeout(opts.GracefulShutdownTimeout),
		exitOnLoss:      opts.ExitOnLeaseLoss,
		clock:           clock.RealClock{},
		conns:           conns,
	}
	m.always, m.leaders = newGroup(m), newGroup(m)
	if restCfg != nil {
		if m.probeHTTP, m.probeConns, err = probeClient(restCfg); err != nil {
			return nil, err
		}
	}
	if m.scheme == nil {
		m.scheme = scheme.Scheme
	}
	m.events = eventpipes.New(m.client, m.scheme, m.log)
	if m.factory == nil {
		m.factory = informer.NewFactory(opts.Client, m.cacheOptions(opts.Cache, opts.Scheme))
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

	if err := m.setUpMetrics(opts); err != nil {
		return nil, err
	}
	if slices.ContainsFunc(m.factory.MemoryBudgets(), func(b informer.MemoryBudget) bool { return b.Policy == informer.BudgetFailReadiness }) {
		// informer.BudgetFailReadiness: a replica whose caches outgrew their budget is not ready.
		if err := m.AddReadyzCheck(MemoryBudgetCheck, func(*http.Request) error { return m.factory.CheckMemoryBudget() }); err != nil {
			return nil, err
		}
	}

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
		cfg := *le
		if cfg.EventRecorder == nil {
			// "<identity> became leader" on the Lease, as kube-controller-manager records it;
			// through events.k8s.io, whose writes in flight Start waits for on its way out
			// ("stopped leading" is recorded during shutdown).
			cfg.EventRecorder = leaseEvents{m.EventRecorder(cmp.Or(cfg.Name, "leader-election"))}
		}
		e, err := leaderelection.NewElector(opts.Client, cfg, leaderelection.Callbacks{
			OnStartedLeading: m.onStartedLeading,
			OnNewLeader: func(id string) {
				m.log().Info("New leader observed", "leader", id)
			},
		})
		if err != nil {
			return nil, fmt.Errorf("manager leader election: %w", err)
		}
		m.elector = e
		m.leaseNamespaceDefaulted = le.Namespace == "" && outsidePod()
		if err := m.addElectionReadyzCheck(); err != nil {
			return nil, err
		}
		if err := m.registerLeaseMetric(); err != nil {
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

// clientFor sets opts.Client, when nil, to a clientset of opts.Config (or of
// GetConfig's) dialling through a tracking dialer (connections.go), and
// returns the config with that dialer and the dialer; nils when opts.Client
// was given.
func clientFor(opts *Options) (*rest.Config, *connrotation.Dialer, error) {
	if opts.Client != nil {
		return nil, nil, nil
	}
	cfg := opts.Config
	if cfg == nil {
		var err error
		if cfg, err = GetConfig(); err != nil {
			return nil, nil, fmt.Errorf("manager: no Client or Config: %w", err)
		}
	}
	cfg = withWarningHandler(unlimited(cfg))
	if !opts.ResponseCompression {
		cfg = builtin.Uncompressed(cfg)
	}
	tracked, conns := trackConnections(cfg)
	// One HTTP client: the clientset and the dynamic client share connections.
	hc, err := rest.HTTPClientFor(tracked)
	if err != nil {
		return nil, nil, fmt.Errorf("manager: client for %s: %w", cfg.Host, err)
	}
	cs, err := kubernetes.NewForConfigAndClient(builtin.ProtobufConfig(tracked), hc)
	if err != nil {
		return nil, nil, fmt.Errorf("manager: client for %s: %w", cfg.Host, err)
	}
	opts.Client = cs
	if opts.Dynamic == nil {
		if opts.Dynamic, err = dynamic.NewForConfigAndClient(tracked, hc); err != nil {
			return nil, nil, fmt.Errorf("manager: dynamic client for %s: %w", cfg.Host, err)
		}
	}
	// The ring's clients (sharding) are built from it too: their connections are closed with these.
	return tracked, conns, nil
}

// log is the logger Start chose, klog.Background() before Start.
func (m *Manager) log() klog.Logger {
	if l := m.logger.Load(); l != nil {
		return *l
	}
	return klog.Background()
}

// Factory returns the informer factory the Manager owns. Take informers from
// it (informer.For[T](mgr.Factory())) before Start, or, for a controller
// added later, from a view held for its life (Factory().HeldUntil(ctx)), so
// that what only it used is released once it was removed.
func (m *Manager) Factory() *informer.Factory { return m.factory }

// Client returns Options.Client.
func (m *Manager) Client() kubernetes.Interface { return m.client }

// Dynamic is the dynamic client for custom resources (Options.Dynamic, or the
// one built from Config with Client), for customresource.NewClient; nil when
// Options gave Client without Dynamic.
func (m *Manager) Dynamic() dynamic.Interface { return m.dynamic }

// Metrics returns the Manager's metrics, for controllers built to report
// into its registry explicitly (controller.Options.Metrics) and for queues
// built by hand (Metrics().QueueMetrics()).
func (m *Manager) Metrics() *controller.Metrics { return m.metrics }

// Registerer returns the registry the Manager's metrics are registered on
// (Options.Registerer, or the Manager's private registry), for components that
// report next to them, such as a webhook server.
func (m *Manager) Registerer() prometheus.Registerer { return m.registerer }

// Gatherer returns what /metrics serves.
func (m *Manager) Gatherer() prometheus.Gatherer { return m.gatherer }

// Elector returns the leader elector, nil without leader election.
func (m *Manager) Elector() *leaderelection.Elector { return m.elector }

// cacheOptions merges the Manager's settings into a copy of o, the
// factory's Options.Cache: what o leaves unset gets the Manager's recorder,
// informer name ("-" for none), staleness check (negative for none),
// dynamic client and scheme.
func (m *Manager) cacheOptions(o informer.Options, s *runtime.Scheme) informer.Options {
	if o.EventRecorder == nil {
		o.EventRecorder = m.EventRecorderFor(informerEventSource)
	}
	switch o.InformerName {
	case "":
		o.InformerName = managerInformerName()
	case noInformerName:
		o.InformerName = ""
	}
	if o.StalenessCheck == 0 {
		o.StalenessCheck = defaultStalenessInterval
	}
	if o.DynamicClient == nil && m.dynamic != nil {
		o.DynamicClient = m.dynamic
	}
	if o.Scheme == nil {
		o.Scheme = s
	}
	return o
}

// noInformerName in Options.Cache.InformerName turns the informer metrics
// of the Manager's factory off.
const noInformerName = "-"
