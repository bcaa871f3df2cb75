// Package manager runs a binary's controllers the way kube-controller-manager
// runs its own: over one shared informer factory, behind Lease leader
// election and feature gates, with health probes, Prometheus metrics, events
// and an ordered shutdown.
//
// # Use
//
//	mgr, err := manager.New(manager.Options{
//		Client:          client,
//		LeaderElection:  &leCfg, // --leader-elect and friends (leaderelection.Config.AddFlags)
//		FeatureGate:     gate,   // --feature-gates (featuregate.Gate.AddFlag)
//		HealthProbeAddr: ":8081", // /healthz, /readyz
//		MetricsAddr:     ":8443", // /metrics
//		MetricsServing:  manager.MetricsServingOptions{SecureServing: true}, // HTTPS, TokenReview + SubjectAccessReview
//	})
//	rs, _ := informer.For[*appsv1.ReplicaSet](mgr.Factory())
//	c, _ := controller.New("replicaset", r, controller.Options[controller.Key]{Workers: 5})
//	controller.Watch(c, rs, controller.EnqueueObject)
//	mgr.Add(c) // r records events through mgr.EventRecorder("replicaset")
//	if err := mgr.Start(ctx); err != nil { // returns when ctx ends, or on a fatal error
//		os.Exit(1) // the binary decides; this package never exits the process
//	}
//
// # Flags
//
// Flags are the flags a controller binary's main registers for its Manager, in one value:
// --kubeconfig, --kube-api-qps and --kube-api-burst, --metrics-addr, --metrics-secure,
// --metrics-cert-dir, --profiling, --health-addr, kube-controller-manager's --leader-elect
// flags (leaderelection.Config.AddFlags), --cache-memory-budget and its policy
// (informer.BudgetFlags) and -v:
//
//	var flags manager.Flags
//	flags.LeaderElection.Name = "my-controller"
//	flags.AddFlags(pflag.CommandLine)
//	pflag.Parse()
//	opts, err := flags.Options() // a malformed value names its flag: exit 2
//	opts.FeatureGate = gate
//	mgr, err := manager.New(opts)
//
// Validate checks every value without reaching the cluster; Options validates, then loads the
// config. The example binaries (examples/internal/demo) register exactly these.
//
// # Client pace
//
// The clients a Manager builds from a Config (or GetConfig's) have no client-side rate limit
// unless the Config sets QPS or a RateLimiter, as with controller-runtime: API Priority and
// Fairness on the server decides. client-go's default, 5 QPS with a burst of 10, makes a
// controller's start-up crawl (60 GETs take 10 s). --kube-api-qps sets a limit.
//
// # What a Manager runs
//
// Anything with Name and Run is a Runnable; every *controller.Controller is
// one. Two optional methods refine it: NeedLeaderElection
// (LeaderElectionRunnable) and Feature (GatedRunnable). Runnables that need
// leader election (the default, as in kube-controller-manager and
// controller-runtime; a controller opts out with
// controller.Options.NeedLeaderElection = new(false)) run only while this
// replica leads; the rest, and every informer, run on all replicas, so a
// standby's caches are warm when it takes over. A Runnable whose feature is
// disabled in Options.FeatureGate is never started; the log says why.
//
// The Manager runs each Runnable with a context carrying its logger and its
// controller.Metrics (controller.WithMetrics), so a controller built without
// its own Metrics reports into the Manager's registry.
//
// # Controllers that wait for their resources
//
// AddWhenServed adds a Runnable built afresh (by a function given a factory
// view held for the term, informer.Factory.HeldUntil) for each period in
// which the resources it needs are served: a controller of a CRD installed
// after the process started, deleted and installed again. Its CRDs are
// watched by name, other resources asked of discovery; while it waits,
// /readyz names what for and /healthz stays ok.
//
// # Sharding
//
// With Options.Sharding, every replica works instead of one leader: the
// replicas form a ring (package sharding) and split the objects of the
// controllers added with AddSharded, and their caches. Such a controller
// takes the informers of the sharded resource and its children from
// ShardFactory, whose every informer selects this replica's label, and runs
// on every member behind the ring's dispatcher, so no object is reconciled by two
// replicas at once. New validates the ring's configuration; Start checks the
// ring's permissions (sharding.CheckAccess) before it starts anything; the
// ring runs as one Runnable named "shard-<ring>", with a /readyz check of
// that name (membership and the sharded controllers' sync) and the
// ctrlkit_shard_* series. Leader election, if also enabled, still decides
// where the other Runnables that need it run.
//
// # Endpoints
//
// /healthz fails when the leader elector's watchdog does (the lease was lost
// and not released). /readyz is ok once the Manager runs, its factory's
// caches synced and every running Runnable with a HasSynced method reports
// synced (a standby's leader-only controllers, not running yet, are not
// waited for), and, with leader election, while a replica that has never
// been ready nor led can read and write its Lease: the check
// "leaderelection" (leaderelection's Elector.ReadyCheck) names the Lease, the
// verb and the API server's answer when it cannot, such as a Role without the
// rule. Once a replica has been ready or led, a refused Lease no longer
// fails /readyz (it would strike every replica, and their webhooks, at
// once): /readyz?verbose says "[+]leaderelection ok, but: <the refusal>",
// the log says it when it begins and ends, and
// ctrlkit_leader_election_lease_refused{name} is 1. /metrics serves Options.Registerer's metrics, a private
// registry by default, never Prometheus' global one; see controller.Metrics
// for the series. Handler serves all three on one mux for tests.
//
// client-go's own series are there too, under kube's and
// controller-runtime's names: rest_client_requests_total{code,method,host},
// rest_client_request_duration_seconds{verb,host},
// rest_client_rate_limiter_duration_seconds{verb,host},
// rest_client_request_retries_total{code,verb,host},
// leader_election_master_status{name} and leader_election_slowpath_total{name}
// (name is the Lease's "<namespace>/<name>"), and kube's informer series
// informer_queued_items, informer_processing_latency_seconds and
// informer_store_resource_version{name,group,version,resource} for the typed
// informers of a factory with a name (informer.Options.InformerName; the
// factory a Manager builds is "ctrlkit-manager-<n>"). client-go reports them through
// process-global hooks that take effect once, so the first New of the
// process hooks one set of collectors in (importing the package does
// nothing) and every Manager's registry serves that same set: the counts
// are the process's, not one Manager's. client-go reads its hooks without a
// lock, so build the first Manager before clients of your own start making
// requests; informers built before it report no store series. A package
// that took the hooks first (component-base's restclient metrics,
// controller-runtime) keeps them, and these series stay empty here.
//
// # Secure metrics
//
// Options.MetricsServing.SecureServing serves MetricsAddr over HTTPS and asks the API server
// about every request, as kube-apiserver's own components do: a TokenReview authenticates the
// bearer token, a SubjectAccessReview checks that its user may get the path (the non-resource
// URL /metrics). No or a bad token is 401, no permission 403, an API server that cannot answer
// 500; decisions are cached briefly (AllowCacheTTL, DenyCacheTTL), errors never. The
// Manager's client needs the ClusterRole system:auth-delegator; a scraper needs
//
//	rules:
//	- nonResourceURLs: ["/metrics", "/debug/informers"]
//	  verbs: ["get"]
//
// The certificate comes from CertDir (tls.crt and tls.key, reloaded when they change on disk,
// see package certwatcher) or is self-signed at Start. The probes stay open on
// HealthProbeAddr, which must then be an address of its own. The metrics server also serves
// DebugInformersPath (/debug/informers: what each informer cache holds, see
// informer.Factory.CacheMemory), and EnableProfiling adds net/http/pprof's /debug/pprof/,
// both behind the same checks (grant get on those paths to their readers). Every server
// has header, read, write and idle timeouts and a 64 KiB header limit, so slow or oversized
// requests are cut off.
//
// # Events
//
// EventRecorder(name) is a controller's recorder of events.k8s.io/v1 Events
// (client-go's tools/events): name is their reportingController, the
// Manager's identity their reportingInstance (the leader election identity,
// else "<hostname>_<pid>"), and each carries an action besides its reason.
// EventRecorderFor(name) is the legacy core/v1 recorder (tools/record), kept
// for APIs that take a record.EventRecorder and for readers of core/v1-only
// fields; kubectl describe shows the events of both, because the API server
// serves every Event through both APIs. The names are controller-runtime's
// GetEventRecorder and GetEventRecorderFor.
//
// Events flow from Start until Start returns; events recorded before or
// after are dropped and logged at V(2). Each API's broadcaster starts on its
// first event, so a Manager that records none runs no event goroutine, and
// Start's return stops them. The factory the Manager builds records a
// Warning event (informer.ReasonUndecodable) on each custom resource it
// cannot decode, through EventRecorderFor("ctrlkit-informer").
//
// # Shutdown
//
// Start shuts down in this order: stop the Runnables (each controller stops
// intake and drains its in-flight Reconciles), stop the informers, end the
// election (releasing the lease with ReleaseOnCancel, only after the work
// stopped), stop events and HTTP. It returns the first fatal error (a
// Runnable's Run error, a cache sync timeout, leaderelection.ErrLeaseLost
// with Options.ExitOnLeaseLoss) instead of exiting the process.
//
// # Losing the Lease
//
// A lost Lease is not fatal by default: the Manager stops the Runnables that
// need leader election, waits for them (up to the graceful shutdown timeout,
// at most LeaseDuration - RenewDeadline; past it, it is fatal), and contends
// again, provided each of them is a RestartableRunnable (else it is fatal); everything else (webhooks,
// probes, metrics, informers, Runnables that need no election) keeps
// running. Winning again runs the leader's Runnables anew: a
// controller.Controller starts a fresh term whose watches replay the cache.
// Options.ExitOnLeaseLoss makes the loss fatal instead, as in
// kube-controller-manager.
//
// Runnables get Options.GracefulShutdownTimeout (30 s by default, as in
// controller-runtime) to return. A Reconcile that ignores its context past
// it is abandoned: Start logs one line per Runnable still running, stops the
// informers, events and HTTP servers all the same, and returns an error
// matching ErrShutdownTimeout that names them (*ShutdownTimeoutError). The
// Lease is not released while abandoned leader-only work may still write —
// a standby taking over would act alongside it — so it expires after its
// LeaseDuration instead; the binary should exit.
package manager
