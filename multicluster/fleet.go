package multicluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
)

var (
	// ErrInvalidOptions is matched by the errors for bad input: Options,
	// cluster names, connections, wirings.
	ErrInvalidOptions = errors.New("invalid multicluster options")
	// ErrNotEngaged is matched by Fleet.Get's error for a cluster that is not
	// engaged (never, or not any more).
	ErrNotEngaged = errors.New("cluster not engaged")
)

// Options configure a Fleet. Only Provider is required.
type Options struct {
	// Provider engages and disengages the clusters.
	Provider Provider

	// Cache configures each cluster's informer factory, as
	// manager.Options.Cache does the Manager's: scopes, transforms, memory
	// budgets (each cluster's own), the release grace. Its clients are the
	// cluster's; its Logger, when unset, is the Fleet's with the cluster's
	// name; its ShareWith, when unset, is a factory of the Fleet's, so the
	// clusters share one sharing table: a sub-object identical across
	// clusters is stored once, and the table's fixed part once.
	Cache informer.Options

	// ProbeInterval is how often each engaged cluster's API server is asked
	// for its version, to tell an unreachable cluster (Cluster.Err,
	// ReadyNote, the ctrlkit_multicluster_cluster_ready metric) and to drop
	// the connections an outage left dead once it answers again, so its
	// informers catch up at once. 0 means 10s; negative is an error.
	ProbeInterval time.Duration

	// Registerer receives the Fleet's metrics; nil registers none.
	Registerer prometheus.Registerer

	// Logger; the zero Logger means the one in Run's context.
	Logger klog.Logger

	// Clock drives the probes; nil means the real clock.
	Clock clock.WithTicker

	// Sharding, when set, spreads the clusters over the replicas running
	// this Fleet: each engages only the clusters the ring gives it.
	Sharding *Sharding

	// ResponseCompression lets the clients the Fleet builds for a cluster
	// (from a Connection without a Client) ask its API server to gzip large
	// responses. Off by default, as manager.Options.ResponseCompression:
	// each compressed watch stream holds a decompressor of about 40 KB for
	// its life, five informers' worth per cluster. Turn it on for clusters
	// reached over slow links.
	ResponseCompression bool
}

const defaultProbeInterval = 10 * time.Second

// Fleet engages clusters from a Provider and runs, in each, the informers
// of the controllers wired to it (Watch, Owns): one controller, one queue,
// many clusters. It is a manager.Runnable (on every replica, as caches are:
// NeedLeaderElection is false).
type Fleet struct {
	opts     Options
	logger   klog.Logger
	clock    clock.WithTicker
	engageMu sync.Mutex // serializes Engage

	mu       sync.Mutex
	ctx      context.Context // Run's; nil before
	stopped  bool            // Run returned
	clusters map[string]*Cluster
	wirings  []wiring
	wg       sync.WaitGroup // every cluster's goroutines
	// fresh holds the controllers built with Freshness.Gate or MaxLag
	// (freshness.go).
	fresh map[*controller.Controller[Key]]freshness

	// tables owns the clusters' factories' sharing table (ShareWith).
	tables *informer.Factory

	// keeper engages the clusters this replica holds (Options.Sharding).
	keeper *keeper

	// engaged is clusters as a lock-free snapshot for Admit on the worker
	// path; replaced under mu.
	engaged atomic.Pointer[map[string]*Cluster]
}

// New returns a Fleet; it engages nothing until Run.
func New(opts Options) (*Fleet, error) {
	if opts.Provider == nil {
		return nil, fmt.Errorf("multicluster: %w: no Provider", ErrInvalidOptions)
	}
	if opts.ProbeInterval < 0 {
		return nil, fmt.Errorf("multicluster: %w: ProbeInterval %v is negative", ErrInvalidOptions, opts.ProbeInterval)
	}
	if opts.ProbeInterval == 0 {
		opts.ProbeInterval = defaultProbeInterval
	}
	f := &Fleet{opts: opts, clock: opts.Clock, clusters: map[string]*Cluster{},
		// Never started: it holds the sharing table of every cluster's
		// factory, so a sub-object identical across clusters is stored once.
		tables: informer.NewFactory(nil, informer.Options{})}
	if f.clock == nil {
		f.clock = clock.RealClock{}
	}
	empty := map[string]*Cluster{}
	f.engaged.Store(&empty)
	if opts.Sharding != nil {
		k, err := newKeeper(f, opts.Sharding)
		if err != nil {
			return nil, err
		}
		f.keeper = k
	}
	if opts.Registerer != nil {
		if err := opts.Registerer.Register(&collector{f: f}); err != nil {
			return nil, fmt.Errorf("multicluster: registering metrics: %w", err)
		}
	}
	return f, nil
}

// Name is the Fleet's name as a manager.Runnable.
func (f *Fleet) Name() string { return "multicluster-fleet" }

// NeedLeaderElection is false: a Fleet's caches run on every replica, so a
// standby that takes over finds them warm.
func (f *Fleet) NeedLeaderElection() bool { return false }

// Run runs the Provider until ctx ends, then disengages every cluster and
// returns once their informers and goroutines have stopped. A Fleet runs
// once.
func (f *Fleet) Run(ctx context.Context) error {
	f.mu.Lock()
	if f.ctx != nil {
		f.mu.Unlock()
		return fmt.Errorf("multicluster: %w: the Fleet runs once", ErrInvalidOptions)
	}
	f.ctx = ctx
	f.logger = f.opts.Logger
	if f.logger.GetSink() == nil {
		f.logger = klog.FromContext(ctx)
	}
	f.mu.Unlock()
	var keeperErr error
	var kwg sync.WaitGroup
	ctx, stop := context.WithCancel(ctx) // the keeper's and the Provider's
	defer stop()
	if f.keeper != nil {
		kwg.Go(func() {
			if keeperErr = f.keeper.run(ctx); keeperErr != nil {
				stop() // a duplicate identity: nothing will work
			}
		})
	}
	err := f.opts.Provider.Run(ctx, f)
	if err == nil {
		<-ctx.Done()
	}
	stop()
	kwg.Wait()
	f.mu.Lock()
	f.stopped = true
	all := slices.Collect(maps.Values(f.clusters))
	f.mu.Unlock()
	for _, cl := range all {
		cl.cancel()
	}
	f.wg.Wait()
	if err != nil {
		return fmt.Errorf("multicluster: provider: %w", err)
	}
	return keeperErr
}

// Engage engages the cluster name until ctx ends (see Engager). With
// Options.Sharding, the cluster is engaged on the one replica the ring
// gives it to, once no other holds it (see Sharding).
func (f *Fleet) Engage(ctx context.Context, name string, conn Connection) error {
	if name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("multicluster: %w: cluster name %q is empty or has a '/'", ErrInvalidOptions, name)
	}
	if conn.Client == nil && conn.Config == nil {
		return fmt.Errorf("multicluster: cluster %q: %w: a Connection needs a Config or a Client", name, ErrInvalidOptions)
	}
	f.mu.Lock()
	if f.ctx == nil || f.stopped {
		f.mu.Unlock()
		return fmt.Errorf("multicluster: engaging cluster %q: %w: the Fleet is not running", name, ErrInvalidOptions)
	}
	f.mu.Unlock()
	if f.keeper != nil {
		f.keeper.offer(ctx, name, conn)
		return nil
	}
	return f.engage(ctx, name, conn)
}

// engage builds and starts the cluster name until ctx ends.
func (f *Fleet) engage(ctx context.Context, name string, conn Connection) error {
	f.engageMu.Lock()
	defer f.engageMu.Unlock()
	f.mu.Lock()
	old := f.clusters[name]
	f.mu.Unlock()
	if old != nil {
		// Engaged again (a rotated credential): the old one goes first, so
		// its informers never feed the queue beside the new one's.
		old.cancel()
		<-old.done
	}
	cl, err := f.newCluster(name, conn)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithCancel(f.ctx)
	cl.ctx, cl.cancel = cctx, cancel
	var endWatches context.CancelFunc
	cl.watches, endWatches = context.WithCancel(context.WithoutCancel(cctx))
	stop := context.AfterFunc(ctx, cancel)
	f.mu.Lock()
	if f.stopped {
		f.mu.Unlock()
		stop()
		cancel()
		endWatches()
		return fmt.Errorf("multicluster: engaging cluster %q: %w: the Fleet is not running", name, ErrInvalidOptions)
	}
	f.clusters[name] = cl
	f.publish()
	wirings := slices.Clone(f.wirings)
	f.wg.Add(1)
	f.mu.Unlock()
	cl.logger.V(1).Info("Engaging cluster")
	for _, w := range wirings {
		cl.attach(w)
	}
	cl.Factory.Start(cctx)
	f.wg.Go(func() { cl.gate(cctx) })
	go func() {
		defer f.wg.Done()
		defer close(cl.done)
		defer stop()
		cl.probe(cctx, f.clock, f.opts.ProbeInterval)
		// Disengaged: no key of the cluster is admitted any more, and the
		// reconciles in flight finish before anything of it goes (with
		// Sharding, before another replica may take it).
		cl.drain()
		f.mu.Lock()
		if f.clusters[name] == cl {
			delete(f.clusters, name)
			f.publish()
		}
		f.mu.Unlock()
		// Only now do the watches end (controller.WatchUntil): no
		// Reconcile of the cluster runs any more, so none records a fence
		// on its informers after the controllers forgot them. Then the
		// events and the informers stop.
		endWatches()
		cl.stopEvents()
		cl.Factory.Shutdown()
		// The connections are the cluster's alone: an idle one would keep
		// its goroutines and buffers until client-go's idle timeout. The
		// http.Client's own CloseIdleConnections does not see through
		// client-go's round trippers.
		if cl.http != nil {
			utilnet.CloseIdleConnectionsFor(cl.http.Transport)
		}
		if cl.dialer != nil {
			cl.dialer.CloseAll()
		}
		cl.logger.V(1).Info("Disengaged cluster")
	}()
	return nil
}

// publish replaces the Admit snapshot; called with f.mu held.
func (f *Fleet) publish() {
	m := maps.Clone(f.clusters)
	f.engaged.Store(&m)
}

// Get returns the engaged cluster name, for a Reconcile to read its
// listers and write with its clients: an error matching ErrNotEngaged when
// it is not (a key of a cluster disengaged while it waited).
func (f *Fleet) Get(name string) (*Cluster, error) {
	if cl, ok := (*f.engaged.Load())[name]; ok {
		return cl, nil
	}
	return nil, fmt.Errorf("multicluster: cluster %q: %w", name, ErrNotEngaged)
}

// Factories returns the informer factories of the engaged clusters, by
// cluster: a manager.Manager running the Fleet shows each on
// /debug/informers after its own.
func (f *Fleet) Factories() map[string]*informer.Factory {
	engaged := *f.engaged.Load()
	out := make(map[string]*informer.Factory, len(engaged))
	for name, cl := range engaged {
		out[name] = cl.Factory
	}
	return out
}

// Clusters returns the names of the engaged clusters, sorted.
func (f *Fleet) Clusters() []string {
	return slices.Sorted(maps.Keys(*f.engaged.Load()))
}

// ReadyNote names the engaged clusters that are not ready (Cluster.Err),
// "" when none: a manager.Manager shows it on /readyz?verbose
// ("[+]synced ok, but: ...") without taking readiness away, since one
// unreachable cluster must not stop the work on the others nor the
// process's webhooks.
func (f *Fleet) ReadyNote() string {
	var notes []string
	for _, name := range f.Clusters() {
		cl, err := f.Get(name)
		if err != nil {
			continue
		}
		if err := cl.Err(); err != nil {
			notes = append(notes, "cluster "+name+": "+err.Error())
		}
	}
	return strings.Join(notes, "; ")
}
