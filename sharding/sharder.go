package sharding

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/leaderelection"
)

// SharderOptions say what a Sharder shards.
type SharderOptions struct {
	// Resource is the sharded resource, the one whose objects are the keys
	// of the ring's controllers. Required.
	Resource schema.GroupVersionResource
	// Kind is Resource's kind, to recognise it in the controller references
	// of children. Default: looked up in client-go's scheme; required for a
	// custom resource that has Children.
	Kind schema.GroupVersionKind
	// Children are the resources whose objects follow their controlling
	// owner (an object of Resource) into its member's cache.
	Children []schema.GroupVersionResource
	// Namespace limits sharding to the objects of one namespace. Default:
	// all namespaces.
	Namespace string
	// Workers is how many keys move through the protocol in parallel: how
	// many of the sharder's patches can be in flight. Default 16; the ring
	// client's write rate (Config.WriteQPS)
	// bounds their rate.
	Workers int
	// Metrics receives the ring's metrics; nil records none.
	Metrics *Metrics
	// Clock judges Lease renewals and times handovers. Default: the real
	// clock.
	Clock clock.WithTicker
}

// defaultSharderWorkers is the default of SharderOptions.Workers: enough
// patches in flight for the default write rate at a few milliseconds per
// round trip, few enough not to crowd a small API server.
const defaultSharderWorkers = 16

// Sharder writes the ring's assignments. Every member runs one; the leader
// of the Lease <ring>-sharder is the only one writing (see the package
// documentation for the protocol). It watches, metadata only and only while
// it leads, the sharded resource, its children and the member Leases.
type Sharder struct {
	cfg     Config
	holder  string // its election identity: the ring identity and a per-process suffix
	opts    SharderOptions
	client  kubernetes.Interface
	meta    metadata.Interface
	w       writer
	clock   clock.WithTicker
	elector *leaderelection.Elector
}

// NewSharder validates cfg (defaults applied) and opts and returns a Sharder
// that has not started. client reads Leases and runs the election; meta
// lists, watches and labels the sharded objects (a ring in ModeServer
// writes only Leases: meta may be nil).
func NewSharder(client kubernetes.Interface, meta metadata.Interface, cfg Config, opts SharderOptions) (*Sharder, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	bad := func(field, format string, args ...any) (*Sharder, error) {
		return nil, &ConfigError{Field: field, Rule: fmt.Sprintf(format, args...)}
	}
	switch {
	case client == nil:
		return bad("client", "client must not be nil")
	case meta == nil && cfg.Mode != ModeServer:
		return bad("metadata", "metadata client must not be nil (a ring in mode %q lists and labels the sharded objects with it)", cfg.Mode)
	case opts.Resource.Version == "" || opts.Resource.Resource == "":
		return bad("Resource", "resource %q needs a version and a resource", opts.Resource.String())
	case opts.Workers < 0:
		return bad("Workers", "workers %d must not be negative", opts.Workers)
	}
	for _, c := range opts.Children {
		if c.Version == "" || c.Resource == "" {
			return bad("Children", "child resource %q needs a version and a resource", c.String())
		}
		if c == opts.Resource {
			return bad("Children", "child resource %s is the sharded resource", c.String())
		}
	}
	if opts.Kind.Empty() {
		opts.Kind = kindOf(opts.Resource)
		if opts.Kind.Empty() && len(opts.Children) > 0 {
			return bad("Kind", "kind of %s is not in client-go's scheme; set SharderOptions.Kind", opts.Resource.String())
		}
	}
	if opts.Workers == 0 {
		opts.Workers = defaultSharderWorkers
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	s := &Sharder{cfg: cfg, holder: leaderelection.UniqueIdentity(cfg.Identity), opts: opts, client: client, meta: meta, w: metadataWriter{meta}, clock: opts.Clock}
	le := cfg.election(cfg.Ring + sharderSuffix)
	// Per process, as the member Lease's holder: two processes of one identity (one host name,
	// or a Pod restarted while its former process runs on behind a partition) would otherwise
	// each take the other's holder for their own and both shard.
	le.Identity = s.holder
	// Released only after the term's writers have returned (leaderelection
	// guarantees it), so the next sharder starts at once.
	le.ReleaseOnCancel = true
	el, err := leaderelection.NewElector(client, le, leaderelection.Callbacks{
		OnStartedLeading: s.lead,
	})
	if err != nil {
		return nil, fmt.Errorf("sharding: ring %q: sharder election: %w", cfg.Ring, err)
	}
	s.elector = el
	return s, nil
}

// Name identifies the sharder among a process's runnables.
func (s *Sharder) Name() string { return "sharder/" + s.cfg.Ring }

// IsLeader reports whether this sharder is the ring's writer now.
func (s *Sharder) IsLeader() bool { return s.elector.IsLeader() }

// Holder is the sharder's identity in its election: the holder of the Lease <ring>-sharder
// while it leads. It is the ring identity and a per-process suffix
// (leaderelection.UniqueIdentity), so that two processes of one identity never both lead;
// IdentityOfHolder maps it back to the identity.
func (s *Sharder) Holder() string { return s.holder }

// Run contends for the sharder's Lease until ctx ends, sharding while it
// leads. It records the ring's mode (ctrlkit_shard_mode) at once. A sharder that loses the Lease stops writing at once and contends
// again; Run returns nil when ctx ends.
func (s *Sharder) Run(ctx context.Context) error {
	s.opts.Metrics.setMode(s.cfg.Ring, s.cfg.Mode)
	logger := klog.FromContext(ctx).WithValues("ring", s.cfg.Ring, "sharder", s.cfg.Identity)
	ctx = klog.NewContext(ctx, logger)
	for {
		err := s.elector.Run(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && !errors.Is(err, leaderelection.ErrLeaseLost) {
			return fmt.Errorf("sharding: ring %q: %w", s.cfg.Ring, err)
		}
		logger.Info("Lost the sharder Lease; contending again")
	}
}

// lead shards until ctx ends (leadership lost or Run's ctx ended), with
// informers of its own that live only as long as this term.
func (s *Sharder) lead(ctx context.Context) {
	logger := klog.FromContext(ctx)
	logger.Info("Leading the ring: sharding", "mode", s.cfg.Mode)
	defer logger.Info("Stopped sharding")
	if s.cfg.Mode == ModeServer {
		s.leadSlots(ctx)
		return
	}
	t, err := s.newTerm(ctx)
	if err != nil {
		// NewSharder's validation leaves nothing here to fail on but a bug;
		// say so and hold on until the term ends.
		logger.Error(err, "Cannot shard")
		<-ctx.Done()
		return
	}
	t.run(ctx)
}

// kindOf finds gvr's kind in client-go's scheme (empty when unknown).
func kindOf(gvr schema.GroupVersionResource) schema.GroupVersionKind {
	for kind := range scheme.Scheme.KnownTypes(gvr.GroupVersion()) {
		gvk := gvr.GroupVersion().WithKind(kind)
		if plural, _ := meta.UnsafeGuessKindToResource(gvk); plural == gvr {
			return gvk
		}
	}
	return schema.GroupVersionKind{}
}
