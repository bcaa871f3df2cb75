package leaderelection

import (
	"errors"
	"fmt"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
)

// ErrLeaseAccess is matched (errors.Is) by Elector.ReadyCheck's error: this candidate cannot
// read or write its Lease. errors.As with a *LeaseAccessError gives the Lease, the verb and the
// API server's answer.
var ErrLeaseAccess = errors.New("leaderelection: cannot access the lease")

// LeaseAccessError is a get, create or update of the Lease that the API server refused: RBAC
// forbids it, the namespace does not exist, the credentials are not accepted. It unwraps to the
// API server's error, so apierrors.IsForbidden and the like see it.
type LeaseAccessError struct {
	// Lease is "<namespace>/<name>".
	Lease string
	// Verb is the request that failed: "get", "create" or "update".
	Verb string
	// Err is the API server's answer.
	Err error
}

func (e *LeaseAccessError) Error() string {
	return fmt.Sprintf("cannot %s lease %s: %v", e.Verb, e.Lease, e.Err)
}

// Unwrap returns the API server's error.
func (e *LeaseAccessError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrLeaseAccess) true.
func (e *LeaseAccessError) Is(target error) bool { return target == ErrLeaseAccess }

// ReadyCheck is a readiness check (a manager.Checker; the Manager adds it to /readyz): it
// fails, with a *LeaseAccessError matching ErrLeaseAccess that names the Lease, the verb and
// the API server's answer, while this candidate cannot read or write its Lease. Such a
// candidate can neither lead nor take over from a leader that dies, yet Check (/healthz)
// passes, since a restart would not help; without this check nothing but its log would say
// that it never leads.
//
// It fails once the API server refused a get, create or update of the Lease (a 4xx answer:
// Forbidden, Unauthorized, NotFound for a namespace that does not exist, ...), and passes again
// after the next one that succeeds, also in a later Run (a refusal is the cluster's, and a
// candidate contending again after a lost Lease reads it before it writes). A Conflict or AlreadyExists is the election at work
// (another candidate wrote first; the server had authorized the write) and counts as a
// success. Server errors, timeouts, throttling and an unreachable server change nothing: they
// strike every replica at once, taking them all out of their Services would not help, and the
// engine's retries (and losing the lease) deal with them. A standby that reads the Lease while
// another candidate holds and renews it is ready, even when its last attempt to take the Lease
// over was refused: it needs no write while the holder lives. It passes before Run, and after
// a Run that ended with its ctx.
func (e *Elector) ReadyCheck(*http.Request) error {
	e.mu.Lock()
	s := e.cur
	e.mu.Unlock()
	if s == nil || s.endedByContext() {
		return nil
	}
	return s.access.err()
}

// leaseAccess is what ReadyCheck reports for one Run: the failed Lease operation nothing has
// made moot since. The lock reports every operation to it.
//
// It is kept across the operations of one attempt of the engine (a get, then maybe a create
// or an update) rather than being the last operation's outcome, which would pass between the
// get and the failing write of every attempt: a probe must not see a candidate that cannot
// write flap to ready.
type leaseAccess struct {
	mu     sync.Mutex
	failed *LeaseAccessError // nil: the Lease is accessible
	before leaseVersion      // the Lease as read before a failed write
}

// got records a get of the Lease: holder and v are what it read when err is nil, me is this
// candidate's identity.
func (a *leaseAccess) got(logger klog.Logger, lease, me, holder string, v leaseVersion, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	defer a.logChange(logger, a.failed)
	switch {
	case err != nil && !apierrors.IsNotFound(err): // NotFound reads fine: the engine creates the Lease next
		if refused(err) {
			a.failed, a.before = &LeaseAccessError{Lease: lease, Verb: "get", Err: err}, leaseVersion{}
		}
	case a.failed == nil:
	case a.failed.Verb == "get":
		a.failed = nil // reading works again; a write that follows reports itself
	case err == nil && holder != "" && holder != me && v != a.before:
		// Another candidate holds the Lease and wrote it since this one's write failed:
		// this one is a standby, which only reads.
		a.failed = nil
	}
}

// wrote records a create or update of the Lease; v is the Lease as read before it.
func (a *leaseAccess) wrote(logger klog.Logger, lease, verb string, v leaseVersion, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	defer a.logChange(logger, a.failed)
	switch {
	case err == nil || apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err):
		a.failed = nil
	case refused(err):
		a.failed, a.before = &LeaseAccessError{Lease: lease, Verb: verb, Err: err}, v
	}
}

// refused reports whether err is the API server refusing this client the request: a 4xx
// answer but a Conflict (AlreadyExists too), a request timeout or throttling, which pass. A
// refusal lasts until someone changes RBAC or the cluster.
func refused(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false // no answer: the server was not reached
	}
	switch code := status.Status().Code; code {
	case http.StatusConflict, http.StatusRequestTimeout, http.StatusTooManyRequests:
		return false
	default:
		return code >= 400 && code < 500
	}
}

// logChange logs a refusal when it begins (or changes verb) and when it ends, not at every
// retry: the engine tries every RetryPeriod, and client-go logs each failure already. a.mu is
// held.
func (a *leaseAccess) logChange(logger klog.Logger, before *LeaseAccessError) {
	switch {
	case a.failed == before:
	case a.failed != nil && (before == nil || before.Verb != a.failed.Verb):
		logger.Error(a.failed, "The API server refuses this replica its lease: it cannot lead, or renew while it leads, until the refusal is lifted",
			"verb", a.failed.Verb)
	case a.failed == nil:
		logger.Info("The lease is accessible again", "verb", before.Verb)
	}
}

func (a *leaseAccess) err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failed == nil {
		return nil
	}
	return a.failed
}
