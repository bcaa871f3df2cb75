package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

var (
	// ErrLeaseLost is returned by Run when this candidate led and then lost the lease
	// (it could not renew within RenewDeadline) while Run's ctx was still alive.
	ErrLeaseLost = errors.New("leaderelection: lease lost")
	// ErrAlreadyRunning is returned by Elector.Run while another Run of the same Elector
	// is in progress.
	ErrAlreadyRunning = errors.New("leaderelection: elector is already running")
	// ErrLeaseNotRenewed is wrapped by Elector.Check when this candidate still holds the
	// lease on record but has not renewed it for longer than LeaseDuration+HealthTolerance.
	ErrLeaseNotRenewed = errors.New("leaderelection: lease not renewed")
)

// Callbacks are the election's lifecycle hooks. Every field may be nil.
type Callbacks struct {
	// OnStartedLeading runs in its own goroutine once the lease is acquired. Its ctx is
	// cancelled the moment leadership ends (lease lost or Run's ctx ended). It may block
	// until ctx ends or return early; Run does not return before it has returned.
	OnStartedLeading func(ctx context.Context)
	// OnStoppedLeading runs once, after OnStartedLeading has returned, and only if
	// OnStartedLeading was called in that Run (client-go calls it on every exit, even for a
	// candidate that never led; ctrlkit pairs it with OnStartedLeading instead).
	OnStoppedLeading func()
	// OnNewLeader is called, in order and from one goroutine per Run, with every holder
	// this candidate observes that differs from the one before (including itself and the
	// first one seen). A released Lease has no holder and is not reported. Run waits for
	// pending calls before returning.
	OnNewLeader func(identity string)
}

// Elector contends for one Lease with client-go's leader-election engine. Create it with
// NewElector, start it with Run; IsLeader, Leader, Identity, Check and ReadyCheck are safe to
// call from any goroutine at any time, including before Run and after it returned. Run may be
// called again after it returned (each Run starts with no observations, like a restarted
// process, but keeps the Identity).
type Elector struct {
	client  kubernetes.Interface
	cfg     Config
	cb      Callbacks
	health  *leaderelection.HealthzAdaptor
	running atomic.Bool

	mu     sync.Mutex
	cur    *session // the latest Run
	leader string   // last holder observed, "" when released or never seen

	// access outlives a Run: a refusal is the cluster's, not the Run's, so a candidate that
	// contends again after a lost Lease is not shown accessible before its first refused write.
	access leaseAccess
}

// Run elects with cfg until ctx ends or the lease is lost; see Elector.Run.
func Run(ctx context.Context, client kubernetes.Interface, cfg Config, cb Callbacks) error {
	e, err := NewElector(client, cfg, cb)
	if err != nil {
		return err
	}
	return e.Run(ctx)
}

// NewElector applies cfg.WithDefaults, validates the result and returns an Elector that has
// not started. A nil client or a cfg that Validate rejects gives an error matching
// ErrInvalidConfig (a *ConfigError for each broken rule).
func NewElector(client kubernetes.Interface, cfg Config, cb Callbacks) (*Elector, error) {
	if client == nil {
		return nil, &ConfigError{Field: "client", Rule: "client must not be nil"}
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// client-go insists on both; ctrlkit lets callers leave either out.
	if cb.OnStartedLeading == nil {
		cb.OnStartedLeading = func(context.Context) {}
	}
	if cb.OnStoppedLeading == nil {
		cb.OnStoppedLeading = func() {}
	}
	return &Elector{
		client: client,
		cfg:    cfg,
		cb:     cb,
		health: leaderelection.NewLeaderHealthzAdaptor(cfg.HealthTolerance),
	}, nil
}

// Identity is this candidate's identity (cfg.Identity after defaulting).
func (e *Elector) Identity() string { return e.cfg.Identity }

// ReleaseTimeout is how long a release (ReleaseOnCancel) may take before the Lease is left
// to expire instead: min(RenewDeadline, 2×RetryPeriod).
func (e *Elector) ReleaseTimeout() time.Duration {
	return min(e.cfg.RenewDeadline, 2*e.cfg.RetryPeriod)
}

// Config is the configuration in use, defaults applied.
func (e *Elector) Config() Config { return e.cfg }

// Leader is the holder this candidate last observed in the Lease, "" before the first
// observation or when the Lease was released.
func (e *Elector) Leader() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leader
}

// IsLeader reports whether this candidate leads now: OnStartedLeading has been called and
// its ctx is not cancelled.
func (e *Elector) IsLeader() bool {
	e.mu.Lock()
	s := e.cur
	e.mu.Unlock()
	return s != nil && s.leading()
}

// Name is the health check's name, for healthz registries that want one.
func (e *Elector) Name() string { return "leaderelection" }

// Check is a healthz check with client-go's watchdog semantics: it fails, wrapping
// ErrLeaseNotRenewed, when the Lease still names this candidate but the last renewal it saw
// is older than LeaseDuration+HealthTolerance — the leader is stuck or lost the lease
// without releasing it, and a restart is the cure. Standbys (a candidate contending again
// after a lost Lease too), candidates that released the lease and Electors whose Run ended
// with its ctx are healthy.
func (e *Elector) Check(req *http.Request) error {
	e.mu.Lock()
	s := e.cur
	e.mu.Unlock()
	// Not while a Run contends without leading: a candidate contending again after a lost
	// Lease reads a record that still names it, which client-go's check takes for a stuck
	// leader.
	if s == nil || s.endedByContext() || s.contending() {
		return nil
	}
	if err := e.health.Check(req); err != nil {
		return fmt.Errorf("%w: lease %s, identity %s: %w", ErrLeaseNotRenewed, e.cfg.key(), e.cfg.Identity, err)
	}
	return nil
}

// Run contends for the Lease until ctx ends or leadership is lost. While another candidate
// leads, this one is a standby that polls the Lease every RetryPeriod (jittered) and takes
// over once the holder has not renewed for LeaseDuration or released it.
//
// Run returns nil when ctx ended (releasing the lease first when ReleaseOnCancel is set),
// an error wrapping ErrLeaseLost when it led and lost the lease while ctx was alive, and
// ErrAlreadyRunning if this Elector is already running. It returns only after
// OnStartedLeading, OnStoppedLeading and every OnNewLeader call have returned, so no
// goroutine it started outlives it.
func (e *Elector) Run(ctx context.Context) error {
	if !e.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	defer e.running.Store(false)

	logger := klog.FromContext(ctx).WithValues("lease", e.cfg.key(), "identity", e.cfg.Identity)
	ctx = klog.NewContext(ctx, logger)

	s := e.newSession()
	read := new(leaseVersion)
	lock := &guardedLock{
		inner: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: e.cfg.Namespace, Name: e.cfg.Name},
			Client:     versionLeases{LeasesGetter: e.client.CoordinationV1(), read: read},
			LockConfig: resourcelock.ResourceLockConfig{Identity: e.cfg.Identity, EventRecorder: e.cfg.EventRecorder},
		},
		s:    s,
		read: read,
		// Two tries' worth: a release that cannot finish by then would only
		// beat the Lease's expiry by little, and a shutdown waits for it.
		releaseTimeout: e.ReleaseTimeout(),
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   e.cfg.LeaseDuration,
		RenewDeadline:   e.cfg.RenewDeadline,
		RetryPeriod:     e.cfg.RetryPeriod,
		ReleaseOnCancel: e.cfg.ReleaseOnCancel,
		Name:            e.cfg.key(),
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: s.started,
			// Run calls the user's OnStoppedLeading itself, after OnStartedLeading returned.
			OnStoppedLeading: func() {},
			// Left nil: client-go would start an unowned goroutine per call. The lock
			// reports holders to s.observe instead.
		},
	})
	if err != nil { // unreachable after Validate, unless client-go adds rules
		return fmt.Errorf("leaderelection: lease %s: %w", e.cfg.key(), err)
	}
	e.mu.Lock()
	e.cur = s
	e.mu.Unlock()
	e.health.SetLeaderElection(le)

	stopNotes, notesDone := make(chan struct{}), make(chan struct{})
	if e.cb.OnNewLeader != nil {
		go func() {
			defer close(notesDone)
			s.deliver(stopNotes)
		}()
	} else {
		close(notesDone)
	}

	s.logger = logger
	le.Run(klog.NewContext(context.WithValue(ctx, engineRunKey{}, true), shutdownQuiet(logger)))
	// client-go's engine returns without waiting for OnStartedLeading; do it here.
	led, done := s.stopLeading()
	if led {
		<-done
	}
	close(stopNotes)
	<-notesDone

	// The engine returns with ctx alive only after it acquired and then failed to renew.
	lost := ctx.Err() == nil
	s.end(!lost)
	if led {
		e.cb.OnStoppedLeading()
	}
	if lost {
		logger.Info("Lost the lease")
		return fmt.Errorf("%w: lease %s, identity %s", ErrLeaseLost, e.cfg.key(), e.cfg.Identity)
	}
	return nil
}

// session is one Run's state.
type session struct {
	e *Elector

	mu       sync.Mutex
	stopped  bool               // leadership is over: a late OnStartedLeading is skipped
	entered  bool               // OnStartedLeading was called
	lead     context.Context    // the ctx handed to OnStartedLeading
	cancel   context.CancelFunc // cancels lead
	done     chan struct{}      // closed when OnStartedLeading returned
	ended    bool               // Run returned
	byCtx    bool               // Run returned because its ctx ended
	reported string             // last holder queued for OnNewLeader
	notes    []string           // holders not yet delivered to OnNewLeader

	wake chan struct{} // capacity 1: a note is waiting

	access *leaseAccess // the Elector's, for ReadyCheck

	logger klog.Logger // Run's, for OnStartedLeading: the engine's demotes cancelled requests
}

// newSession is the state of a new Run of e.
func (e *Elector) newSession() *session {
	return &session{e: e, done: make(chan struct{}), wake: make(chan struct{}, 1), access: &e.access}
}

// started is the engine's OnStartedLeading; the engine runs it in a goroutine of its own.
func (s *session) started(engineCtx context.Context) {
	s.mu.Lock()
	if s.stopped { // leadership ended before this goroutine got to run
		s.mu.Unlock()
		return
	}
	// A ctx of our own, so leadership can end before the engine's: see guardedLock.Update.
	s.lead, s.cancel = context.WithCancel(klog.NewContext(engineCtx, s.logger))
	s.entered = true
	ctx := s.lead
	s.mu.Unlock()
	defer close(s.done)
	s.e.cb.OnStartedLeading(ctx)
}

// stopLeading ends leadership: it cancels OnStartedLeading's ctx (or stops it from being
// called) and reports whether it was called and the channel closed when it returns.
func (s *session) stopLeading() (entered bool, done <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	if s.cancel != nil {
		s.cancel()
	}
	return s.entered, s.done
}

// stepDown ends leadership and waits, within ctx, for OnStartedLeading to return.
func (s *session) stepDown(ctx context.Context) error {
	entered, done := s.stopLeading()
	if !entered {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("leaderelection: OnStartedLeading has not returned: %w", context.Cause(ctx))
	}
}

func (s *session) leading() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lead != nil && s.lead.Err() == nil
}

// contending reports whether this Run is in progress and does not lead.
func (s *session) contending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.ended && (s.lead == nil || s.lead.Err() != nil)
}

func (s *session) end(byCtx bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended, s.byCtx = true, byCtx
}

func (s *session) endedByContext() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended && s.byCtx
}

// observe records the Lease's holder as just read or written.
func (s *session) observe(holder string) {
	s.e.mu.Lock()
	s.e.leader = holder
	s.e.mu.Unlock()
	if s.e.cb.OnNewLeader == nil || holder == "" {
		return
	}
	s.mu.Lock()
	if holder == s.reported {
		s.mu.Unlock()
		return
	}
	s.reported = holder
	s.notes = append(s.notes, holder)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// deliver calls OnNewLeader for every note, in order, until stop is closed; then it delivers
// what is left (nothing is queued after the engine returned) and returns.
func (s *session) deliver(stop <-chan struct{}) {
	for {
		s.mu.Lock()
		notes := s.notes
		s.notes = nil
		s.mu.Unlock()
		for _, id := range notes {
			s.e.cb.OnNewLeader(id)
		}
		if len(notes) > 0 {
			continue
		}
		select {
		case <-s.wake:
		case <-stop:
			s.mu.Lock()
			notes = s.notes
			s.notes = nil
			s.mu.Unlock()
			for _, id := range notes {
				s.e.cb.OnNewLeader(id)
			}
			return
		}
	}
}
