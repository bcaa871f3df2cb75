package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/featuregate"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/leaderelection"
)

// Runnable is what a Manager runs. Every *Controller[K] is one, whatever its
// K; other types can be too (a cache warmer, a periodic job).
//
// A Runnable that also has HasSynced() bool is part of /readyz.
type Runnable interface {
	// Name must be unique within a Manager.
	Name() string
	// Run blocks until ctx ends (then returns nil after finishing in-flight
	// work) or fails; an error is fatal for the Manager.
	Run(ctx context.Context) error
	// NeedLeaderElection reports whether Run may only happen while this
	// process leads.
	NeedLeaderElection() bool
	// Feature is the feature gate the Runnable is behind, "" for none.
	Feature() featuregate.Feature
}

var _ Runnable = (*Controller[Key])(nil)

// ManagerOptions configure a Manager. Only Client is required.
type ManagerOptions struct {
	// Client is the clientset of the informer factory (unless Factory is
	// set), the Lease and the events. Required.
	Client kubernetes.Interface

	// Factory is the informer factory the Manager owns: it starts it, waits
	// for its caches for /readyz, and shuts it down after the controllers
	// stopped. nil means informer.NewFactory(Client).
	Factory *informer.Factory

	// LeaderElection, when non-nil with Enabled true (the --leader-elect
	// flag), makes the Manager contend for a Lease: Runnables that need
	// leader election run only while this process leads, everything else
	// (other Runnables, the informer caches) runs on every replica so
	// standbys are warm. Set ReleaseOnCancel to hand the Lease over at once
	// on shutdown; the Manager releases it only after every controller
	// stopped. nil or Enabled false means no election: everything runs.
	LeaderElection *leaderelection.Config

	// FeatureGate decides whether Runnables with a Feature start. A
	// Runnable whose gate is off is not started, and the log says so.
	// Adding a Runnable with a Feature to a Manager without a FeatureGate
	// is an error.
	FeatureGate featuregate.Gates

	// HealthProbeAddr is where /healthz and /readyz are served, e.g.
	// ":8081". Empty means not served (HealthzHandler and ReadyzHandler
	// still work, for httptest).
	HealthProbeAddr string
	// MetricsAddr is where /metrics is served, e.g. ":8080". Empty means
	// not served (MetricsHandler still works). It may equal
	// HealthProbeAddr: then one server serves all three paths.
	MetricsAddr string

	// Registerer receives the controller and queue metrics. nil means a
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

	// CacheSyncTimeout, when > 0, makes Start fail (with a *CacheSyncError)
	// when the factory's caches have not synced this long after Start. 0
	// means wait as long as it takes (/readyz fails meanwhile).
	CacheSyncTimeout time.Duration
}

// Manager runs a set of controllers over one shared informer factory, behind
// optional leader election and feature gates, serves health probes and
// metrics, records events, and shuts everything down in order. Build it with
// NewManager, Add controllers, then Start.
type Manager struct {
	client      kubernetes.Interface
	factory     *informer.Factory
	gate        featuregate.Gates
	elector     *leaderelection.Elector
	metrics     *Metrics
	gatherer    prometheus.Gatherer
	scheme      *runtime.Scheme
	optLogger   klog.Logger
	logger      atomic.Pointer[klog.Logger] // set by Start; nil before
	healthAddr  string
	metricsAddr string
	syncTimeout time.Duration

	mu         sync.Mutex
	runnables  []Runnable
	names      map[string]struct{}
	started    bool
	stopping   bool // shutdown began: a late OnStartedLeading starts nothing
	ctrlCtx    context.Context
	leaders    []Runnable
	active     []Runnable // started or to be started: the /readyz set
	fatal      chan error
	runWG      sync.WaitGroup // every Runnable.Run
	events     record.EventBroadcaster
	recorders  map[string]record.EventRecorder
	boundAddrs map[string]string // "health"/"metrics" → address listened on

	running      atomic.Bool
	cachesSynced atomic.Bool
}

// NewManager validates opts and builds a Manager. Errors match
// ErrInvalidOptions (an *OptionsError naming the field), or are the leader
// election configuration's own (matching leaderelection.ErrInvalidConfig).
func NewManager(opts ManagerOptions) (*Manager, error) {
	bad := func(field, reason string) (*Manager, error) {
		return nil, &OptionsError{Field: "ManagerOptions." + field, Reason: reason}
	}
	if opts.Client == nil {
		return bad("Client", "nil")
	}
	if opts.CacheSyncTimeout < 0 {
		return bad("CacheSyncTimeout", fmt.Sprintf("%v is negative", opts.CacheSyncTimeout))
	}
	m := &Manager{
		client:      opts.Client,
		factory:     opts.Factory,
		gate:        opts.FeatureGate,
		scheme:      opts.Scheme,
		optLogger:   opts.Logger,
		healthAddr:  opts.HealthProbeAddr,
		metricsAddr: opts.MetricsAddr,
		syncTimeout: opts.CacheSyncTimeout,
		names:       map[string]struct{}{},
		recorders:   map[string]record.EventRecorder{},
		boundAddrs:  map[string]string{},
	}
	if m.factory == nil {
		m.factory = informer.NewFactory(opts.Client)
	}
	if m.scheme == nil {
		m.scheme = scheme.Scheme
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
	metrics, err := NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	m.metrics, m.gatherer = metrics, gath

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
	}
	return m, nil
}

// Add registers controllers (any Runnable). Names must be unique within the
// Manager (ErrDuplicateController); a Runnable with a Feature needs a
// FeatureGate; nothing can be added once Start was called. A Controller
// added without Options.Metrics reports into the Manager's registry, if its
// queue was not used yet.
func (m *Manager) Add(rs ...Runnable) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return fmt.Errorf("manager: adding controllers: %w", ErrAlreadyStarted)
	}
	seen := map[string]struct{}{}
	for i, r := range rs {
		if r == nil {
			return &OptionsError{Field: "Manager.Add", Reason: fmt.Sprintf("controller %d is nil", i)}
		}
		name := r.Name()
		if _, dup := m.names[name]; dup {
			return fmt.Errorf("manager: %w %q", ErrDuplicateController, name)
		}
		if _, dup := seen[name]; dup {
			return fmt.Errorf("manager: %w %q", ErrDuplicateController, name)
		}
		seen[name] = struct{}{}
		if f := r.Feature(); f != "" && m.gate == nil {
			return &OptionsError{Controller: name, Field: "Feature",
				Reason: fmt.Sprintf("%q is set but ManagerOptions.FeatureGate is nil", f)}
		}
	}
	for _, r := range rs {
		m.names[r.Name()] = struct{}{}
		m.runnables = append(m.runnables, r)
		if b, ok := r.(interface{ setDefaultMetrics(*Metrics) bool }); ok {
			b.setDefaultMetrics(m.metrics)
		}
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

// Client returns ManagerOptions.Client.
func (m *Manager) Client() kubernetes.Interface { return m.client }

// Metrics returns the Manager's metrics, for controllers built to report
// into its registry explicitly (Options.Metrics).
func (m *Manager) Metrics() *Metrics { return m.metrics }

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
	return m.boundAddrs["health"]
}

// MetricsAddr returns the address /metrics is served on once Start has
// listened ("" before, or when not served).
func (m *Manager) MetricsAddr() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.boundAddrs["metrics"]
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
//     stops taking keys and waits for its in-flight Reconciles), stop the
//     informers, end the election (releasing the Lease with
//     ReleaseOnCancel), stop events and the HTTP servers.
//
// It returns nil after a cancelled ctx, or the first fatal error: a
// Runnable's Run error, a *CacheSyncError, or leaderelection.ErrLeaseLost
// (wrapped) when the lease was lost — the caller exits, as
// kube-controller-manager does, instead of this package calling os.Exit.
// A Manager starts once.
func (m *Manager) Start(ctx context.Context) error {
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		return fmt.Errorf("manager: %w", ErrAlreadyStarted)
	}
	m.started = true
	rs := slices.Clone(m.runnables)
	m.mu.Unlock()

	logger := m.optLogger
	if logger.GetSink() == nil {
		logger = klog.FromContext(ctx)
	}
	m.logger.Store(&logger)
	ctx = klog.NewContext(ctx, logger)
	// Each stage below is stopped explicitly, in order, so none of them
	// inherits ctx's cancellation.
	base := context.WithoutCancel(ctx)

	servers, err := m.listen(logger)
	if err != nil {
		return err
	}
	m.startEvents()
	m.factory.Start(base)

	var always, leaders, active []Runnable
	for _, r := range rs {
		if f := r.Feature(); f != "" && !m.gate.Enabled(f) {
			logger.Info("Not starting controller: its feature gate is disabled", "controller", r.Name(), "feature", f)
			continue
		}
		active = append(active, r)
		if m.elector != nil && r.NeedLeaderElection() {
			leaders = append(leaders, r)
		} else {
			always = append(always, r)
		}
	}
	ctrlCtx, stopControllers := context.WithCancel(base)
	defer stopControllers()
	fatal := make(chan error, len(rs)+1)
	m.mu.Lock()
	m.ctrlCtx, m.leaders, m.active, m.fatal = ctrlCtx, leaders, active, fatal
	m.mu.Unlock()

	syncDone := make(chan struct{})
	go func() {
		defer close(syncDone)
		m.waitForCaches(ctrlCtx, fatal)
	}()

	m.mu.Lock()
	for _, r := range always {
		m.goRunLocked(ctrlCtx, r)
	}
	m.mu.Unlock()

	var electorDone chan error
	electionCtx, endElection := context.WithCancel(base)
	defer endElection()
	if m.elector != nil {
		logger.Info("Contending for leadership", "identity", m.elector.Identity(),
			"controllers", len(leaders), "controllersOnEveryReplica", len(always))
		electorDone = make(chan error, 1)
		go func() { electorDone <- m.elector.Run(electionCtx) }()
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
	m.runWG.Wait()
	<-syncDone
	// 4: stop informers.
	m.factory.Shutdown()
	m.cachesSynced.Store(false)
	// 5: release the lease.
	endElection()
	if electorDone != nil {
		if err := <-electorDone; err != nil && first == nil {
			first = err
		}
	}
	// Controllers that never ran (gated off, or a standby's leader-only ones)
	// still hold a queue; free its goroutines.
	for _, r := range rs {
		if q, ok := r.(interface{ shutdownQueue() }); ok {
			q.shutdownQueue()
		}
	}
	m.stopEvents()
	m.shutdownServers(servers, logger)
	// Later fatal errors are logged; the first one is returned.
	for len(fatal) > 0 {
		if err := <-fatal; err != first {
			logger.Error(err, "Another error during shutdown")
		}
	}
	logger.Info("Manager stopped")
	return first
}

// waitForCaches marks the Manager's caches synced, or reports a timeout.
func (m *Manager) waitForCaches(ctx context.Context, fatal chan<- error) {
	if m.syncTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.syncTimeout)
		defer cancel()
	}
	if err := m.factory.WaitForCacheSync(ctx); err != nil {
		if m.syncTimeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			fatal <- &CacheSyncError{Controller: "manager", Err: err}
		}
		return
	}
	m.cachesSynced.Store(true)
	m.log().V(2).Info("Caches synced")
}

// goRunLocked runs r in its own goroutine, counted in runWG. m.mu is held, so
// that shutdown (which sets stopping under m.mu before runWG.Wait) never
// races with the Add.
func (m *Manager) goRunLocked(ctx context.Context, r Runnable) {
	m.runWG.Add(1)
	go func() {
		defer m.runWG.Done()
		if err := r.Run(ctx); err != nil {
			m.fatal <- fmt.Errorf("controller %q: %w", r.Name(), err)
		}
	}()
}

// onStartedLeading runs the controllers that need leader election until
// leadership ends or the Manager stops them, whichever is first.
func (m *Manager) onStartedLeading(leading context.Context) {
	m.mu.Lock()
	if m.stopping {
		m.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(leading)
	defer cancel()
	// The elector's ctx carries a logger with the lease and identity; the
	// controllers log with the Manager's, as the ones that need no election do.
	ctx = klog.NewContext(ctx, m.log())
	stop := context.AfterFunc(m.ctrlCtx, cancel)
	defer stop()
	var wg sync.WaitGroup
	for _, r := range m.leaders {
		wg.Add(1)
		m.runWG.Add(1)
		go func() {
			defer m.runWG.Done()
			defer wg.Done()
			if err := r.Run(ctx); err != nil {
				m.fatal <- fmt.Errorf("controller %q: %w", r.Name(), err)
			}
		}()
	}
	n := len(m.leaders)
	m.mu.Unlock()
	m.log().Info("Started leading: starting the controllers that need leader election", "controllers", n)
	wg.Wait()
	m.log().Info("Controllers that need leader election stopped")
}

// HealthzHandler serves /healthz: 200 "ok", or 500 naming the failure when
// the leader elector's watchdog (leaderelection.Elector.Check) fails — the
// lease was lost or not renewed and not released, and a restart is due.
func (m *Manager) HealthzHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m.elector != nil {
			if err := m.elector.Check(r); err != nil {
				http.Error(w, "leaderelection: "+err.Error(), http.StatusInternalServerError)
				return
			}
		}
		writeOK(w)
	})
}

// ReadyzHandler serves /readyz: 200 "ok" once the Manager has started and
// every cache synced (the factory's and each started controller's watched
// informers), else 503 naming what is not ready. Standbys are ready: their
// caches are warm.
func (m *Manager) ReadyzHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if err := m.ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		writeOK(w)
	})
}

func (m *Manager) ready() error {
	if !m.running.Load() {
		return errors.New("manager not running")
	}
	if !m.cachesSynced.Load() {
		return errors.New("informer caches not synced")
	}
	m.mu.Lock()
	active := m.active
	m.mu.Unlock()
	var unsynced []string
	for _, r := range active {
		if s, ok := r.(interface{ HasSynced() bool }); ok && !s.HasSynced() {
			unsynced = append(unsynced, r.Name())
		}
	}
	if len(unsynced) > 0 {
		return fmt.Errorf("controllers not synced: %s", strings.Join(unsynced, ", "))
	}
	return nil
}

// MetricsHandler serves the Manager's Gatherer in the Prometheus text
// format.
func (m *Manager) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(m.gatherer, promhttp.HandlerOpts{})
}

// Handler serves /healthz, /readyz and /metrics on one mux.
func (m *Manager) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/healthz", m.HealthzHandler())
	mux.Handle("/readyz", m.ReadyzHandler())
	mux.Handle("/metrics", m.MetricsHandler())
	return mux
}

func writeOK(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok"))
}

// server is one listening HTTP server.
type server struct {
	srv  *http.Server
	done chan struct{}
}

// listen starts the HTTP servers the options ask for.
func (m *Manager) listen(logger klog.Logger) ([]server, error) {
	type want struct {
		addr string
		mux  *http.ServeMux
		kind []string
	}
	var wants []*want
	add := func(addr, kind string, paths map[string]http.Handler) {
		if addr == "" {
			return
		}
		var w *want
		for _, x := range wants {
			// One server for equal addresses, unless the port is to be
			// picked (":0"): then each gets its own.
			if x.addr == addr && !strings.HasSuffix(addr, ":0") {
				w = x
			}
		}
		if w == nil {
			w = &want{addr: addr, mux: http.NewServeMux()}
			wants = append(wants, w)
		}
		w.kind = append(w.kind, kind)
		for p, h := range paths {
			w.mux.Handle(p, h)
		}
	}
	add(m.healthAddr, "health", map[string]http.Handler{"/healthz": m.HealthzHandler(), "/readyz": m.ReadyzHandler()})
	add(m.metricsAddr, "metrics", map[string]http.Handler{"/metrics": m.MetricsHandler()})

	var servers []server
	for _, w := range wants {
		ln, err := net.Listen("tcp", w.addr)
		if err != nil {
			m.shutdownServers(servers, logger)
			return nil, fmt.Errorf("manager: serving %s on %q: %w", strings.Join(w.kind, " and "), w.addr, err)
		}
		s := server{srv: &http.Server{Handler: w.mux, ReadHeaderTimeout: 10 * time.Second}, done: make(chan struct{})}
		go func() {
			defer close(s.done)
			if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error(err, "HTTP server failed", "addr", ln.Addr().String())
			}
		}()
		m.mu.Lock()
		for _, k := range w.kind {
			m.boundAddrs[k] = ln.Addr().String()
		}
		m.mu.Unlock()
		logger.Info("Serving", "addr", ln.Addr().String(), "what", w.kind)
		servers = append(servers, s)
	}
	return servers, nil
}

func (m *Manager) shutdownServers(servers []server, logger klog.Logger) {
	for _, s := range servers {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := s.srv.Shutdown(ctx); err != nil {
			logger.Error(err, "HTTP server shutdown")
			_ = s.srv.Close()
		}
		cancel()
		<-s.done
	}
	m.mu.Lock()
	clear(m.boundAddrs)
	m.mu.Unlock()
}

// EventRecorderFor returns an event recorder whose events carry name as
// their source component (use the controller's name). Events are written
// through ManagerOptions.Client while the Manager runs (its broadcaster lives
// from Start until Start returns, so it leaves no goroutine behind); events
// recorded before Start or after it returned are dropped and logged at V(2).
func (m *Manager) EventRecorderFor(name string) record.EventRecorder {
	return &managerRecorder{m: m, name: name}
}

func (m *Manager) startEvents() {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: m.client.CoreV1().Events("")})
	b.StartStructuredLogging(4)
	m.mu.Lock()
	m.events = b
	m.mu.Unlock()
}

func (m *Manager) stopEvents() {
	m.mu.Lock()
	b := m.events
	m.events = nil
	clear(m.recorders)
	m.mu.Unlock()
	if b != nil {
		b.Shutdown()
	}
}

// recorder returns the live recorder for name, nil when not running.
func (m *Manager) recorder(name string) record.EventRecorder {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.events == nil {
		return nil
	}
	r := m.recorders[name]
	if r == nil {
		r = m.events.NewRecorder(m.scheme, corev1.EventSource{Component: name})
		m.recorders[name] = r
	}
	return r
}

// managerRecorder forwards to the Manager's broadcaster while it runs.
type managerRecorder struct {
	m    *Manager
	name string
}

var _ record.EventRecorder = (*managerRecorder)(nil)

func (r *managerRecorder) dropped(reason string) {
	r.m.log().V(2).Info("Dropping event: the manager is not running", "source", r.name, "reason", reason)
}

func (r *managerRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	if rec := r.m.recorder(r.name); rec != nil {
		rec.Event(object, eventtype, reason, message)
		return
	}
	r.dropped(reason)
}

func (r *managerRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	if rec := r.m.recorder(r.name); rec != nil {
		rec.Eventf(object, eventtype, reason, messageFmt, args...)
		return
	}
	r.dropped(reason)
}

func (r *managerRecorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	if rec := r.m.recorder(r.name); rec != nil {
		rec.AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
		return
	}
	r.dropped(reason)
}
