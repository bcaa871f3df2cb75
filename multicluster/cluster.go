package multicluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/connrotation"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/builtin"
	"github.com/ctrlkit/ctrlkit/internal/lagwatch"
	"github.com/ctrlkit/ctrlkit/internal/object"
)

// Cluster is one engaged cluster: its clients and informer factory, valid
// until it is disengaged (Context ends then).
type Cluster struct {
	// Name is the Provider's name for the cluster.
	Name string
	// Config is the Connection's; nil for a cluster engaged with clients.
	Config   *rest.Config
	Client   kubernetes.Interface
	Dynamic  dynamic.Interface
	Metadata metadata.Interface
	// Factory holds the cluster's informers: ask it for the informers a
	// Reconcile reads (those a Watch or Owns built are shared). It is shut
	// down when the cluster is disengaged.
	Factory *informer.Factory

	logger klog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	// watches is the lifetime of the controllers' watches of the cluster
	// (controller.WatchUntil): it ends once its reconciles in flight
	// returned, after ctx.
	watches context.Context
	done    chan struct{}
	dialer  *connrotation.Dialer // nil for given clients
	http    *http.Client         // the clients' HTTP client; nil for given clients
	// unreachable is the probe's last failure; nil once it answered.
	unreachable atomic.Pointer[error]
	// attachErr is the last wiring that could not be built here.
	attachErr atomic.Pointer[error]

	// synced is closed once the informers built at engagement synced: their
	// lists were read after the cluster was engaged, so its keys reconcile
	// on a view no older than that (the gate). held are the keys refused
	// before, by the controller that refused them, enqueued again then.
	synced chan struct{}
	heldMu sync.Mutex
	held   map[*admission]map[Key]struct{}
	// versions are the informers the freshness gate waits for
	// (freshness.go), lagging what it waits for now; clock times its retries.
	versions []lagwatch.Source
	lagging  atomic.Pointer[string]
	clock    clock.WithTicker
	// breakers are the controllers' Freshness.MaxLag in the cluster, by
	// admission (freshness.go), built while wiring under heldMu and watched
	// once the gate passed; lagOpen counts those open.
	breakers map[*admission]*clusterBreaker
	lagOpen  atomic.Int32
	// fencers are the informers writes of each resource are fenced on here
	// (fences.go).
	fenceMu sync.Mutex
	fencers map[schema.GroupResource]fencer

	// events is the cluster's event broadcaster, built at the first
	// EventRecorder and shut down with the cluster.
	eventsMu sync.Mutex
	events   record.EventBroadcaster

	// flight counts the reconciles of this cluster's keys in progress
	// (admission); closing refuses new ones once it is disengaged.
	flight  sync.Mutex
	closing bool
	active  int
	idle    chan struct{} // closed when active drops to 0 while closing
}

// gate closes synced once the informers built at engagement synced (and,
// for controllers with Freshness.Gate, reached a consistent read taken then),
// and hands the keys held meanwhile back to their controllers.
func (c *Cluster) gate(ctx context.Context) {
	if err := c.Factory.WaitForCacheSync(ctx); err != nil {
		return // disengaged first
	}
	if err := c.waitFresh(ctx); err != nil {
		return // disengaged first
	}
	c.heldMu.Lock()
	close(c.synced)
	held := c.held
	c.held = nil
	c.heldMu.Unlock()
	for a, keys := range held {
		for k := range keys {
			a.c.Enqueue(k)
		}
	}
	c.watchLag(ctx)
}

// hold keeps key for a's controller until the cluster synced, and reports
// whether it did (false: synced, go on).
func (c *Cluster) hold(a *admission, key Key) bool {
	select {
	case <-c.synced:
		return false
	default:
	}
	c.heldMu.Lock()
	defer c.heldMu.Unlock()
	if c.held == nil { // synced meanwhile
		return false
	}
	keys := c.held[a]
	if keys == nil {
		keys = map[Key]struct{}{}
		c.held[a] = keys
	}
	keys[key] = struct{}{}
	return true
}

// enter admits a reconcile of the cluster unless it is being disengaged.
func (c *Cluster) enter() bool {
	c.flight.Lock()
	defer c.flight.Unlock()
	if c.closing {
		return false
	}
	c.active++
	return true
}

// exit ends a reconcile enter admitted.
func (c *Cluster) exit() {
	c.flight.Lock()
	defer c.flight.Unlock()
	c.active--
	if c.active == 0 && c.idle != nil {
		close(c.idle)
		c.idle = nil
	}
}

// drain refuses new reconciles of the cluster and waits for those in
// flight to return.
func (c *Cluster) drain() {
	c.flight.Lock()
	c.closing = true
	if c.active == 0 {
		c.flight.Unlock()
		return
	}
	idle := make(chan struct{})
	c.idle = idle
	c.flight.Unlock()
	<-idle
}

// EventRecorder returns a recorder of Events into this cluster (where
// `kubectl describe` there shows them), as component: what a Reconcile
// says about the cluster's objects belongs in the cluster, not the hub. The
// cluster's broadcaster is built at the first call and shut down with the
// cluster; after that, events are dropped.
func (c *Cluster) EventRecorder(component string) record.EventRecorder {
	c.eventsMu.Lock()
	defer c.eventsMu.Unlock()
	if c.events == nil {
		c.events = record.NewBroadcaster(record.WithContext(c.ctx))
		c.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.Client.CoreV1().Events("")})
		if c.ctx.Err() != nil {
			c.events.Shutdown()
		}
	}
	return c.events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
}

// stopEvents shuts the event broadcaster down, if one was built.
func (c *Cluster) stopEvents() {
	c.eventsMu.Lock()
	defer c.eventsMu.Unlock()
	if c.events != nil {
		c.events.Shutdown()
	}
}

// Context ends when the cluster is disengaged (and when the Fleet stops):
// the lifetime of anything a Reconcile starts for this cluster alone.
func (c *Cluster) Context() context.Context { return c.ctx }

// Err says why the cluster is not ready: its API server did not answer the
// last probe, a wiring could not be built here, its informers have not
// synced yet, or (Freshness.Gate) one has not reached the API server's state.
// nil when it is ready.
func (c *Cluster) Err() error {
	if p := c.unreachable.Load(); p != nil {
		return fmt.Errorf("unreachable: %w", *p)
	}
	if p := c.attachErr.Load(); p != nil {
		return *p
	}
	if !c.Factory.HasSynced() {
		// A context ended already makes WaitForCacheSync name the informers
		// not synced without waiting: a resource the cluster does not serve
		// (a CRD not installed there) is named so.
		done, cancel := context.WithCancel(context.Background())
		cancel()
		var se *informer.CacheSyncError
		if errors.As(c.Factory.WaitForCacheSync(done), &se) && len(se.Unsynced) > 0 {
			return fmt.Errorf("caches not synced: %s", strings.Join(se.Unsynced, ", "))
		}
		return errors.New("caches not synced")
	}
	if p := c.lagging.Load(); p != nil {
		return errors.New(*p)
	}
	if s := c.staleness(); s != "" {
		return errors.New("caches lag behind the API server beyond Freshness.MaxLag: " + s)
	}
	return nil
}

func (f *Fleet) newCluster(name string, conn Connection) (*Cluster, error) {
	cl := &Cluster{Name: name, Config: conn.Config, Client: conn.Client, Dynamic: conn.Dynamic, Metadata: conn.Metadata,
		done: make(chan struct{}), logger: f.logger.WithValues("cluster", name), clock: f.clock,
		synced: make(chan struct{}), held: map[*admission]map[Key]struct{}{}}
	if conn.Client == nil {
		cfg := rest.CopyConfig(conn.Config)
		if !f.opts.ResponseCompression {
			cfg.DisableCompression = true
		}
		if cfg.QPS == 0 && cfg.RateLimiter == nil {
			cfg.QPS = -1 // as manager.GetConfig: the server's priority and fairness decide, not client-go's 5 QPS
		}
		if cfg.Dial == nil {
			// Dead connections after an outage are closed once the
			// probe gets an answer again (as a Manager does).
			cl.dialer = connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
			cfg.Dial = cl.dialer.DialContext
		}
		// One HTTP client for the three, as controller-runtime shares one: one transport (one
		// TLS setup, one connection pool) per cluster instead of three.
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return nil, fmt.Errorf("multicluster: cluster %q: HTTP client: %w", name, err)
		}
		cl.http = hc
		if cl.Client, err = kubernetes.NewForConfigAndClient(builtin.ProtobufConfig(cfg), hc); err != nil {
			return nil, fmt.Errorf("multicluster: cluster %q: client: %w", name, err)
		}
		if cl.Dynamic, err = dynamic.NewForConfigAndClient(cfg, hc); err != nil {
			return nil, fmt.Errorf("multicluster: cluster %q: dynamic client: %w", name, err)
		}
		if cl.Metadata, err = metadata.NewForConfigAndClient(cfg, hc); err != nil {
			return nil, fmt.Errorf("multicluster: cluster %q: metadata client: %w", name, err)
		}
	}
	opts := f.opts.Cache
	opts.DynamicClient, opts.MetadataClient = cl.Dynamic, cl.Metadata
	if opts.ShareWith == nil {
		opts.ShareWith = f.tables
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = cl.logger
	}
	cl.Factory = informer.NewFactory(cl.Client, opts)
	return cl, nil
}

// probe asks the cluster's API server for its version every interval until
// ctx ends, recording whether it answers.
func (c *Cluster) probe(ctx context.Context, clk clock.WithTicker, interval time.Duration) {
	t := clk.NewTicker(interval)
	defer t.Stop()
	for {
		c.ask(ctx, interval)
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

func (c *Cluster) ask(ctx context.Context, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d := c.Client.Discovery()
	if d == nil {
		return
	}
	rc := d.RESTClient()
	var err error
	if object.IsNil(rc) {
		_, err = d.ServerVersion() // a fake's discovery
	} else {
		err = rc.Get().AbsPath("/version").Do(ctx).Error()
	}
	if c.ctx.Err() != nil {
		return // disengaged meanwhile
	}
	if err != nil {
		if c.unreachable.Swap(&err) == nil {
			c.logger.Info("Cluster unreachable; its informers retry with backoff", "err", err)
		}
		if _, answered := err.(apierrors.APIStatus); !answered && c.dialer != nil {
			// No answer at all: the connection may be one an outage left
			// dead (a load balancer or NAT that forgot it), which the
			// next ask would wait on too. Requests and watches on it fail
			// now and are retried on new connections.
			c.dialer.CloseAll()
		}
		return
	}
	if c.unreachable.Swap(nil) != nil {
		c.logger.Info("Cluster reachable again")
		if c.dialer != nil {
			// Requests and watches still on connections the outage left
			// dead fail now and are retried on new ones.
			c.dialer.CloseAll()
		}
	}
}
