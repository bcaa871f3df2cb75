package sharding

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/leaderelection"
)

var (
	// ErrMembershipLost is returned by Member.Run when the member could not
	// renew its Lease within RenewDeadline: its work was stopped, and the
	// sharder gives its keys to others once the Lease has expired.
	ErrMembershipLost = errors.New("sharding: membership lost")
	// ErrNotMember is wrapped by Member.Check while the member does not
	// hold its Lease.
	ErrNotMember = errors.New("sharding: not a member of the ring")
)

// DuplicateIdentityError is the error Member.Run returns (errors.As finds
// it) when another live process renews the Lease of the same identity: it
// names the identity and the holder that kept it.
type DuplicateIdentityError struct {
	Ring, Identity string
	// Holder is the holder identity written in the Lease by the other
	// process (the identity and a random suffix of that process).
	Holder string
}

func (e *DuplicateIdentityError) Error() string {
	return fmt.Sprintf("sharding: identity held by another live member: ring %q, identity %q: Lease held and renewed by %q",
		e.Ring, e.Identity, e.Holder)
}

// Member is one process's membership of a ring: it holds the Lease
// <ring>.<identity> (labelled shard.ctrlkit.dev/ring=<ring>) and renews it
// every RetryPeriod, with leader election's engine, as the only candidate
// for it. A process restarted with the same identity waits for its former
// incarnation's Lease to expire, exactly as a leader's successor does, so
// the two never overlap.
type Member struct {
	cfg    Config
	client kubernetes.Interface
	holder string // Lease holder: identity and a per-process suffix
	clock  clock.WithTicker

	elector *leaderelection.Elector
	mu      sync.Mutex
	joined  chan struct{} // closed when the Lease is first held in the current Run
}

// MemberOptions are the optional knobs of NewMember.
type MemberOptions struct {
	// Clock times the reads of the Lease that look for a duplicate
	// identity. Default: the real clock. (Renewals are client-go's
	// engine's, on the real clock.)
	Clock clock.WithTicker
}

// NewMember validates cfg (defaults applied) and returns a Member that has
// not joined.
func NewMember(client kubernetes.Interface, cfg Config, opts MemberOptions) (*Member, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if client == nil {
		return nil, &ConfigError{Field: "client", Rule: "client must not be nil"}
	}
	m := &Member{cfg: cfg, client: client, holder: leaderelection.UniqueIdentity(cfg.Identity), clock: opts.Clock, joined: make(chan struct{})}
	if m.clock == nil {
		m.clock = clock.RealClock{}
	}
	le := cfg.election(memberLeaseName(cfg.Ring, cfg.Identity))
	le.Identity = m.holder
	// Released only after the work has returned (leaderelection
	// guarantees it), so the sharder may move the keys at once.
	le.ReleaseOnCancel = true
	el, err := leaderelection.NewElector(client, le, leaderelection.Callbacks{})
	if err != nil {
		return nil, fmt.Errorf("sharding: ring %q: member Lease: %w", cfg.Ring, err)
	}
	m.elector = el
	return m, nil
}

// Config returns the ring configuration in use, defaults applied.
func (m *Member) Config() Config { return m.cfg }

// Identity is the member's identity, the value of the assignment label on
// the objects it owns.
func (m *Member) Identity() string { return m.cfg.Identity }

// Selector is the label selector of this member's objects, for
// informer.WithLabelSelector on the informers of the sharded resource and
// its children.
func (m *Member) Selector() string { return Selector(m.cfg.Ring, m.cfg.Identity) }

// IsMember reports whether the member holds its Lease now.
func (m *Member) IsMember() bool {
	m.mu.Lock()
	el := m.elector
	m.mu.Unlock()
	return el.IsLeader()
}

// Check is a readiness check (a manager.Checker): nil while the member
// holds its Lease, else an error wrapping ErrNotMember naming the ring and
// the Lease. A replica that is not a member reconciles nothing, so it should
// not count as ready.
func (m *Member) Check(*http.Request) error {
	if m.IsMember() {
		return nil
	}
	return fmt.Errorf("%w %q: Lease %s/%s not held by %s", ErrNotMember, m.cfg.Ring, m.cfg.Namespace,
		memberLeaseName(m.cfg.Ring, m.cfg.Identity), m.holder)
}

// Joined is closed once the member holds its Lease in the current (or
// next) Run.
func (m *Member) Joined() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.joined
}

// Run joins the ring and runs work with a context that ends when ctx ends or
// when the member cannot renew its Lease within RenewDeadline; Run returns
// after work has returned, and only then releases the Lease. work must not
// return before everything it started (controllers, their reconciles) has
// stopped: the Lease's release tells the sharder that no reconcile of this
// member runs any more.
//
// Run returns nil when ctx ended, an error matching ErrMembershipLost when
// the Lease was lost, and a *DuplicateIdentityError when, before joining,
// it saw another process of this identity renew the Lease (a crashed former
// process, which renews nothing, is waited out instead).
func (m *Member) Run(ctx context.Context, work func(ctx context.Context)) error {
	logger := klog.FromContext(ctx).WithValues("ring", m.cfg.Ring, "member", m.cfg.Identity)
	ctx = klog.NewContext(ctx, logger)
	// Retried like a renewal: an API server briefly unreachable at start-up
	// must not end the process.
	for {
		err := m.ensureLease(ctx)
		if err == nil {
			break
		}
		logger.Error(err, "Cannot create or label the member Lease; retrying", "retryPeriod", m.cfg.RetryPeriod)
		t := m.clock.NewTimer(m.cfg.RetryPeriod)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
	m.mu.Lock()
	select {
	case <-m.joined:
		m.joined = make(chan struct{})
	default:
	}
	joined := m.joined
	m.mu.Unlock()

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	el, err := leaderelection.NewElector(m.client, m.elector.Config(), leaderelection.Callbacks{
		OnStartedLeading: func(ctx context.Context) {
			logger.Info("Joined the ring")
			close(joined)
			if work != nil {
				work(ctx)
			}
		},
		OnStoppedLeading: func() { logger.Info("Left the ring") },
	})
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.elector = el
	m.mu.Unlock()

	var wg sync.WaitGroup
	wg.Go(func() {
		if h := m.watchForDuplicate(runCtx, joined); h != "" {
			cancel(&DuplicateIdentityError{Ring: m.cfg.Ring, Identity: m.cfg.Identity, Holder: h})
		}
	})
	err = el.Run(runCtx)
	cancel(nil)
	wg.Wait()
	var dup *DuplicateIdentityError
	if errors.As(context.Cause(runCtx), &dup) {
		return dup
	}
	if errors.Is(err, leaderelection.ErrLeaseLost) {
		return fmt.Errorf("%w: ring %q, member %q: %w", ErrMembershipLost, m.cfg.Ring, m.cfg.Identity, err)
	}
	return err
}

// watchForDuplicate reads the member Lease every RetryPeriod until the
// member joins, and returns the holder of another process of this identity
// once it has seen that holder renew the Lease: a live duplicate, which
// would keep this process out for ever. A former process of this identity
// that crashed holds the Lease without renewing it, and is waited out by
// the election; a read that fails (a partition) tells nothing. Returns ""
// when ctx ends or the member joined.
func (m *Member) watchForDuplicate(ctx context.Context, joined <-chan struct{}) string {
	leases := m.client.CoordinationV1().Leases(m.cfg.Namespace)
	name := memberLeaseName(m.cfg.Ring, m.cfg.Identity)
	t := m.clock.NewTicker(m.cfg.RetryPeriod)
	defer t.Stop()
	var holder string
	var renewed time.Time // holder's renew time when first read
	for {
		select {
		case <-ctx.Done():
			return ""
		case <-joined:
			return ""
		case <-t.C():
		}
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			continue
		}
		h, rt := "", time.Time{}
		if l.Spec.HolderIdentity != nil {
			h = *l.Spec.HolderIdentity
		}
		if l.Spec.RenewTime != nil {
			rt = l.Spec.RenewTime.Time
		}
		switch {
		case h == "" || h == m.holder:
			holder = ""
		case h != holder:
			holder, renewed = h, rt
		case !rt.Equal(renewed):
			return h
		}
	}
}

// ensureLease creates the member Lease with the ring's label and this
// member's weight, or sets them on a Lease that lacks them, so the sharder's
// label-selected watch sees it with the right weight. The election engine
// then updates only its spec.
func (m *Member) ensureLease(ctx context.Context) error {
	leases := m.client.CoordinationV1().Leases(m.cfg.Namespace)
	name := memberLeaseName(m.cfg.Ring, m.cfg.Identity)
	var weight *string // nil: weight 1, no annotation
	if m.cfg.Weight > 1 {
		weight = ptr(strconv.Itoa(m.cfg.Weight))
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: m.cfg.Namespace, Labels: map[string]string{RingLabel: m.cfg.Ring}}}
	if weight != nil {
		lease.Annotations = map[string]string{weightAnnotation: *weight}
	}
	_, err := leases.Create(ctx, lease, metav1.CreateOptions{})
	if err == nil || !apierrors.IsAlreadyExists(err) {
		return err
	}
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	have, ok := l.Annotations[weightAnnotation]
	if l.Labels[RingLabel] == m.cfg.Ring && (weight == nil && !ok || weight != nil && have == *weight) {
		return nil
	}
	_, err = leases.Patch(ctx, name, types.MergePatchType,
		metaPatch(l.ResourceVersion, map[string]*string{RingLabel: ptr(m.cfg.Ring)}, map[string]*string{weightAnnotation: weight}), metav1.PatchOptions{})
	return err
}

// MemberWeight is the weight (Config.Weight) a member Lease publishes: 1
// when it publishes none, or one out of range.
func MemberWeight(l *coordinationv1.Lease) int {
	w, err := strconv.Atoi(l.Annotations[weightAnnotation])
	if err != nil || w < 1 || w > MaxWeight {
		return 1
	}
	return w
}
