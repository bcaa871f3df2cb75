package leaderelection

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// guardedLock wraps client-go's LeaseLock for one Run. It tells the session which holder it
// sees (for Leader and OnNewLeader, without the engine's goroutine per call) and it fixes
// two hazards in the engine's release path, which runs when ReleaseOnCancel is set:
//
//   - On a lost lease the engine releases before it cancels OnStartedLeading's ctx, so a
//     standby could acquire the emptied Lease (or, with the API server unreachable, the
//     expired one) while the old leader's guarded code still runs. Here a release first
//     ends leadership and waits for OnStartedLeading to return, before its first read;
//     if it does not return within the engine's release timeout (RenewDeadline) the Lease
//     is left to expire instead.
//   - The engine decides a release is its to make from its last observation, not from the
//     Get it has just done, and a Conflict retry refreshes the resourceVersion: a leader that
//     lost the lease to another candidate would empty that candidate's Lease. Here a release
//     is refused unless the Get that precedes it shows this candidate as the holder.
//
// It also makes every renewal visible to standbys. The engine notices a renewal by
// comparing the JSON of the record it reads, and that JSON has the renew time in whole
// seconds (metav1.Time): renewals within one second look identical, so a standby dates the
// last renewal up to a second too early and may take over a lease up to a second before it
// expires — before the old leader has given up, with short durations. Get appends the
// Lease's resourceVersion (every write changes it) and its renew time in microseconds (for
// fake clientsets, which leave resourceVersion empty) to the bytes the engine compares.
//
// And it reports the outcome of every get, create and update to the session's leaseAccess,
// for Elector.ReadyCheck.
//
// The engine calls a lock from its Run goroutine only, so the fields need no mutex.
type guardedLock struct {
	inner resourcelock.Interface
	s     *session
	read  *leaseVersion // the Lease last read through versionLeases

	lastHolder   string // holder in the last successful Get
	lastHolderOK bool

	// releaseTimeout bounds the release's calls together (the engine gives each
	// RenewDeadline): a release only hands over sooner than expiry would, so with
	// the API server unreachable it should not hold up a shutdown for long.
	releaseTimeout time.Duration
	releaseBy      time.Time // set by the release's first call
}

// releasing bounds ctx, a call of the engine's release, by releaseTimeout from the first.
func (l *guardedLock) releasing(ctx context.Context) (context.Context, context.CancelFunc) {
	if l.releaseTimeout <= 0 {
		return ctx, func() {}
	}
	if l.releaseBy.IsZero() {
		l.releaseBy = time.Now().Add(l.releaseTimeout)
	}
	return context.WithDeadline(ctx, l.releaseBy)
}

var _ resourcelock.Interface = (*guardedLock)(nil)

func (l *guardedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	if !fromEngineRun(ctx) {
		// The engine's release: it reads before it writes, on a ctx of its own. Leadership
		// ends here, not at the write: after a failed renewal the engine releases before
		// it cancels OnStartedLeading's ctx, and with the API server unreachable this read
		// alone can take RenewDeadline, while a standby may take over once LeaseDuration
		// passed since the last renewal.
		if err := l.s.stepDown(ctx); err != nil {
			return nil, nil, fmt.Errorf("leaderelection: not releasing lease %s: %w", l.inner.Describe(), err)
		}
		var cancel context.CancelFunc
		ctx, cancel = l.releasing(ctx)
		defer cancel()
	}
	rec, raw, err := l.inner.Get(ctx)
	l.lastHolderOK = err == nil
	holder := ""
	if err == nil {
		holder = rec.HolderIdentity
	}
	l.s.access.got(klog.FromContext(ctx), l.inner.Describe(), l.inner.Identity(), holder, *l.read, err)
	if err != nil {
		return rec, raw, err
	}
	l.lastHolder = holder
	l.s.observe(rec.HolderIdentity)
	raw = fmt.Appendf(raw[:len(raw):len(raw)], "\x00resourceVersion=%s\x00renewTime=%s", l.read.resourceVersion, l.read.renewTime)
	return rec, raw, nil
}

func (l *guardedLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := l.inner.Create(ctx, ler)
	l.s.access.wrote(klog.FromContext(ctx), l.inner.Describe(), "create", *l.read, err)
	if err != nil {
		return err
	}
	l.s.observe(ler.HolderIdentity)
	return nil
}

func (l *guardedLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	if ler.HolderIdentity == "" { // the engine writes an empty holder only to release
		if err := l.s.stepDown(ctx); err != nil {
			return fmt.Errorf("leaderelection: not releasing lease %s: %w", l.inner.Describe(), err)
		}
		if !l.lastHolderOK || l.lastHolder != l.inner.Identity() {
			return fmt.Errorf("leaderelection: not releasing lease %s: it is held by %q, not %q",
				l.inner.Describe(), l.lastHolder, l.inner.Identity())
		}
		var cancel context.CancelFunc
		ctx, cancel = l.releasing(ctx)
		defer cancel()
	}
	err := l.inner.Update(ctx, ler)
	l.s.access.wrote(klog.FromContext(ctx), l.inner.Describe(), "update", *l.read, err)
	if err != nil {
		return err
	}
	l.s.observe(ler.HolderIdentity)
	return nil
}

func (l *guardedLock) RecordEvent(s string) { l.inner.RecordEvent(s) }
func (l *guardedLock) Identity() string     { return l.inner.Identity() }
func (l *guardedLock) Describe() string     { return l.inner.Describe() }

// engineRunKey marks the ctx Elector.Run hands to the engine: every lock call the engine makes
// while it acquires or renews carries it; its release runs on a ctx of its own.
type engineRunKey struct{}

func fromEngineRun(ctx context.Context) bool { return ctx.Value(engineRunKey{}) != nil }

// leaseVersion is what tells two writes of a Lease apart.
type leaseVersion struct {
	resourceVersion string
	renewTime       string // RFC 3339 with the Lease's microseconds
}

// versionLeases is the Leases client handed to client-go's LeaseLock: it remembers the
// version of the last Lease read, for guardedLock.Get.
type versionLeases struct {
	coordv1client.LeasesGetter
	read *leaseVersion
}

func (v versionLeases) Leases(namespace string) coordv1client.LeaseInterface {
	return versionLeaseInterface{LeaseInterface: v.LeasesGetter.Leases(namespace), read: v.read}
}

type versionLeaseInterface struct {
	coordv1client.LeaseInterface
	read *leaseVersion
}

func (l versionLeaseInterface) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	lease, err := l.LeaseInterface.Get(ctx, name, opts)
	if apierrors.IsNotFound(err) {
		*l.read = leaseVersion{} // what was read before is gone
	}
	if err == nil {
		l.read.resourceVersion = lease.ResourceVersion
		l.read.renewTime = ""
		if lease.Spec.RenewTime != nil {
			l.read.renewTime = lease.Spec.RenewTime.UTC().Format(time.RFC3339Nano)
		}
	}
	return lease, err
}
