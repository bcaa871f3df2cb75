package manager

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/featuregate"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/leaderelection"
)

// Options configure a Manager. Only Client is required.
type Options struct {
	// Client is the clientset of the informer factory (unless Factory is
	// set), the Lease and the events. nil means one built from Config.
	Client kubernetes.Interface
	// Config is the API server to talk to when Client is nil. nil means
	// GetConfig's: $KUBECONFIG, ~/.kube/config, then in-cluster, as kubectl
	// finds it. Tests pass Client (testkit's), so they never reach a
	// cluster by accident. A Config with QPS 0 and no RateLimiter (client-go's
	// 5 QPS, burst 10, by default) gets no client-side rate limit, as with
	// controller-runtime: API Priority and Fairness on the server decides. Set
	// QPS and Burst for a limit of your own; they are kept. The API server's
	// warnings (deprecated APIs, ignored fields) are logged at klog's warning
	// level, once per message, unless Config has a WarningHandler of its own.
	// Clients built from it are the Manager's own: unless Config has a Dial
	// of its own, it closes their connections when the API server answers
	// again after an outage, dead ones included (connections.go), and when
	// Start returns.
	Config *rest.Config

	// ResponseCompression lets the clients built from Config ask the API
	// server to gzip large responses, which Go's transport does unless told
	// not to. Off by default, as in kube-controller-manager and
	// kube-scheduler: between a controller and its API server compression
	// costs CPU on both ends and latency, and each compressed watch stream
	// holds a decompressor of about 40 KB for its life. Turn it on for a
	// controller that reaches its API server over a slow link. A Config with
	// DisableCompression set stays uncompressed either way.
	ResponseCompression bool
	// Dynamic is the dynamic client for custom resources: the Manager's
	// factory serves informer.ForResource with it (informer.Options.DynamicClient)
	// and Dynamic returns it for customresource.NewClient. nil means one built
	// from Config along with Client, sharing its configuration (QPS, burst,
	// user agent) and its HTTP connections; with Client given instead of
	// Config (tests pass testkit's), nil means none: pass the Env's Dynamic.
	Dynamic dynamic.Interface

	// Factory is the informer factory the Manager owns: it starts it, waits
	// for its caches for /readyz, and shuts it down after the controllers
	// stopped. nil means the Manager builds one on Client with Cache,
	// recording events about undecodable custom resources through the
	// Manager (informer.Options.EventRecorder) and reporting client-go's
	// informer metrics under the name "ctrlkit-manager-<n>", n counting the
	// Managers of the process from 1 (informer.Options.InformerName). A
	// Factory of your own reports them only with a name of its own, and its
	// informers report their store only when taken after the process's
	// first New (which hooks client-go's metrics in).
	Factory *informer.Factory

	// Cache configures the factory the Manager builds when Factory is nil
	// (for example Namespace, or ByObject transforms), as
	// controller-runtime's manager.Options.Cache. The Manager fills in what
	// it leaves unset: EventRecorder (its own), InformerName
	// ("ctrlkit-manager-<n>"; "-" for none), StalenessCheck
	// (a check every minute; negative for none), DynamicClient
	// (Dynamic) and Scheme (Scheme). Setting it together with Factory is an
	// error.
	Cache informer.Options

	// LeaderElection, when non-nil with Enabled true (the --leader-elect
	// flag), makes the Manager contend for a Lease: Runnables that need
	// leader election run only while this process leads, everything else
	// (other Runnables, the informer caches) runs on every replica so
	// standbys are warm. Set ReleaseOnCancel to hand the Lease over at once
	// on shutdown; the Manager releases it only after every controller
	// stopped. /readyz gets a check "leaderelection" that fails while this
	// replica cannot read or write the Lease (leaderelection's
	// Elector.ReadyCheck: a standby that reads it is ready). nil or Enabled
	// false means no election: everything runs. Outside a Pod, a Namespace
	// left empty defaults to "ctrlkit-system" (leaderelection.DefaultLeaseNamespace),
	// and Start checks once that it exists: if the API server says it does
	// not, Start returns an *OptionsError (ErrInvalidOptions) naming the
	// option, --leader-elect-resource-namespace and the namespace, where
	// controller-runtime refuses to start without LeaderElectionNamespace;
	// Forbidden means it cannot tell and goes on.
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
	// without, naming the missing one (while the API server does not answer,
	// it waits and asks again, as the informers would). The ring runs as one Runnable named
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

	// Scheme resolves the kinds of objects events are about, and of custom
	// resources whose Go type is not named after its kind (the factory the
	// Manager builds gets it through informer.Options.Scheme). nil means
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
	// 0 means 30 s (as in controller-runtime); a negative value means no
	// deadline. Unlike
	// controller-runtime's *time.Duration, 0 does not mean "do not wait".
	GracefulShutdownTimeout time.Duration
}
