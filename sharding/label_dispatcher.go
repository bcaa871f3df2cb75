package sharding

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/metadata"
	kworkqueue "k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/informer"
)

// ackWorkers is how many drain acknowledgements a Dispatcher writes in
// parallel: a join drains a share of every member's keys at once.
const ackWorkers = 4

// DispatcherOptions configure NewDispatcher.
type DispatcherOptions struct {
	// Metadata writes the drain acknowledgements. Required.
	Metadata metadata.Interface
	// Children are the member's informers of the child resources (selected
	// by the member's label, like the owners'): a newly assigned owner is not
	// reconciled until they have delivered the children barrier.
	Children []Source
	// BarrierTimeout bounds the wait for a children barrier: past it the key
	// is reconciled anyway, logged and counted. Default: the ring's
	// RenewDeadline.
	BarrierTimeout time.Duration
	// Metrics receives ctrlkit_shard_keys_owned and the barrier time-outs;
	// nil records nothing.
	Metrics *Metrics
	// Clock times the barrier time-out. Default: the real clock.
	Clock clock.WithTicker
}

// labelDispatcher is a Dispatcher in label mode (see NewDispatcher).
type labelDispatcher[K Key] struct {
	cfg      Config
	holder   string // the member's Lease holder: the process the keys must be stamped for
	owners   Source
	enqueue  func(K)
	w        writer
	clock    clock.WithTicker
	metrics  *Metrics
	timeout  time.Duration
	children []Source
	trackers []*rvTracker
	// watchOwners registers the typed owner handler (see ownerHandler); it
	// returns the function that removes it.
	watchOwners func() (func(), error)

	mu     sync.Mutex
	logger klog.Logger // Run's, for the barrier time-outs Admit logs
	// acks is the acknowledgement queue while Run runs (nil otherwise, so a
	// dispatcher that never runs starts no goroutine); drains seen before
	// are kept in pendingAcks.
	acks        kworkqueue.TypedRateLimitingInterface[string]
	pendingAcks map[string]bool
	inFlight    map[string]bool
	acking      map[string]bool   // acknowledgement patch under way
	afterAck    map[string]K      // keys refused while acking, enqueued once it ends
	acked       map[string]string // key -> the version whose drain was acknowledged, while cached
	deleted     map[string]deletion
	refused     map[string]refusal[K]
	waiting     map[string]waiting[K]
	owned       int
}

// NewDispatcher returns the label-mode Dispatcher of member's controller
// over the owners informer (the sharded resource); enqueue is the
// controller's Enqueue, for keys held back by a barrier. The Dispatcher
//
//   - refuses keys whose owner carries the drain label, and keys it does
//     not cache unless it saw their owner deleted while assigned here (a
//     key handed over leaves the cache too, and a retry, requeue or child
//     event may still bring it: that is not a deletion);
//   - acknowledges a drain, once the key is not being reconciled, by
//     removing the assignment and drain labels in one patch preconditioned
//     on the version that carried the drain label;
//   - holds back the first Reconcile of a newly assigned owner until the
//     child informers (opts.Children) have delivered the children barrier,
//     and enqueues it then.
//
// The owners' and children's informers must select the member's label
// (informer.WithLabelSelector with Member.Selector).
func NewDispatcher[K Key, T informer.Object](member *Member, owners informer.Informer[T], enqueue func(K), opts DispatcherOptions) (*Dispatcher[K], error) {
	bad := func(field, rule string) (*Dispatcher[K], error) { return nil, &ConfigError{Field: field, Rule: rule} }
	switch {
	case member == nil:
		return bad("member", "member must not be nil")
	case owners == nil:
		return bad("owners", "owners informer must not be nil")
	case enqueue == nil:
		return bad("enqueue", "enqueue function must not be nil")
	case opts.Metadata == nil:
		return bad("Metadata", "metadata client must not be nil")
	case opts.BarrierTimeout < 0:
		return bad("BarrierTimeout", fmt.Sprintf("barrier timeout %v must not be negative", opts.BarrierTimeout))
	}
	d := newDispatcher(member.Config(), member.holder, owners, enqueue, metadataWriter{opts.Metadata}, opts)
	for i, c := range opts.Children {
		if c == nil {
			return bad("Children", fmt.Sprintf("child informer %d is nil", i))
		}
	}
	return &Dispatcher[K]{impl: d}, nil
}

func newDispatcher[K Key, T informer.Object](cfg Config, holder string, owners informer.Informer[T], enqueue func(K), w writer, opts DispatcherOptions) *labelDispatcher[K] {
	d := &labelDispatcher[K]{
		cfg: cfg, holder: holder, owners: owners, enqueue: enqueue, w: w, clock: opts.Clock, metrics: opts.Metrics,
		timeout: opts.BarrierTimeout, children: opts.Children,
		logger:      klog.Background().WithValues("ring", cfg.Ring, "member", cfg.Identity),
		pendingAcks: map[string]bool{}, inFlight: map[string]bool{}, acking: map[string]bool{}, afterAck: map[string]K{},
		acked: map[string]string{}, deleted: map[string]deletion{}, refused: map[string]refusal[K]{}, waiting: map[string]waiting[K]{},
	}
	d.watchOwners = func() (func(), error) {
		reg, err := owners.AddHandler(ownerHandler[K, T]{d})
		if err != nil {
			return nil, err
		}
		return func() { _ = owners.RemoveHandler(reg) }, nil
	}
	if d.clock == nil {
		d.clock = clock.RealClock{}
	}
	if d.timeout == 0 {
		d.timeout = cfg.RenewDeadline
	}
	for _, c := range opts.Children {
		d.trackers = append(d.trackers, &rvTracker{resource: c.GVR().GroupResource().String(), onRaise: d.releaseWaiting})
	}
	return d
}

// Run registers the dispatcher's handlers and acknowledges drains until ctx
// ends.
func (d *labelDispatcher[K]) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("ring", d.cfg.Ring, "member", d.cfg.Identity)
	ctx = klog.NewContext(ctx, logger)
	acks := kworkqueue.NewTypedRateLimitingQueueWithConfig(
		kworkqueue.NewTypedItemExponentialFailureRateLimiter[string](10*time.Millisecond, d.cfg.RetryPeriod),
		kworkqueue.TypedRateLimitingQueueConfig[string]{Name: "shard-acks-" + d.cfg.Ring, Clock: d.clock})
	d.mu.Lock()
	d.logger = logger
	d.acks = acks
	for k := range d.pendingAcks {
		acks.Add(k)
	}
	clear(d.pendingAcks)
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.acks = nil
		d.mu.Unlock()
		acks.ShutDown()
	}()
	unwatch, err := d.watch()
	defer unwatch()
	if err != nil {
		return err
	}

	var wg sync.WaitGroup
	for range ackWorkers {
		wg.Go(func() {
			for d.processAck(ctx, acks) {
			}
		})
	}
	wg.Go(func() {
		tick := d.clock.NewTicker(max(d.timeout/4, time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C():
				d.releaseWaiting()
			}
		}
	})
	<-ctx.Done()
	acks.ShutDown()
	wg.Wait()
	return nil
}
