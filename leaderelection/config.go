package leaderelection

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/leaderelection"
)

// Defaults are kube-controller-manager's (component-base's LeaderElectionConfiguration and
// the 20 s watchdog kube-controller-manager hands to its healthz adaptor).
const (
	DefaultLeaseDuration   = 15 * time.Second
	DefaultRenewDeadline   = 10 * time.Second
	DefaultRetryPeriod     = 2 * time.Second
	DefaultHealthTolerance = 20 * time.Second
	DefaultNamespace       = "kube-system"
)

// JitterFactor is client-go's: a candidate waits between RetryPeriod and
// (1+JitterFactor)×RetryPeriod between attempts, so RenewDeadline must exceed
// JitterFactor×RetryPeriod for the leader to get more than one renewal attempt.
const JitterFactor = leaderelection.JitterFactor

// Validation errors, one per rule, reported by [Config.Validate] in this order (the first
// five are client-go's rules in client-go's order; the sixth closes a gap client-go leaves). Match them with errors.Is.
var (
	ErrLeaseDurationTooShort    = errors.New("leaderelection: leaseDuration must be greater than renewDeadline")
	ErrRenewDeadlineTooShort    = errors.New("leaderelection: renewDeadline must be greater than retryPeriod*JitterFactor")
	ErrLeaseDurationNotPositive = errors.New("leaderelection: leaseDuration must be greater than zero")
	ErrRenewDeadlineNotPositive = errors.New("leaderelection: renewDeadline must be greater than zero")
	ErrRetryPeriodNotPositive   = errors.New("leaderelection: retryPeriod must be greater than zero")
	// ErrLeaseDurationUnsafe is ctrlkit's rule on top of client-go's. A leader that fails
	// to renew keeps leading for up to RetryPeriod+RenewDeadline after its last renewal,
	// while standbys take over LeaseDuration after it — as stored in the Lease, in whole
	// seconds. Unless the stored duration exceeds RetryPeriod+RenewDeadline, a standby can
	// start while the old leader still leads (client-go accepts 15s/14s/2s, for example).
	ErrLeaseDurationUnsafe     = errors.New("leaderelection: leaseDuration in whole seconds must be greater than renewDeadline+retryPeriod")
	ErrNegativeHealthTolerance = errors.New("leaderelection: healthTolerance must not be negative")
	ErrInvalidNamespace        = errors.New("leaderelection: namespace is not a valid DNS-1123 label")
	ErrInvalidName             = errors.New("leaderelection: name is not a valid DNS-1123 subdomain")
	ErrEmptyIdentity           = errors.New("leaderelection: identity must not be empty")
)

// Config says which Lease to contend for and how. The zero value of every field but Name
// means its documented default once [Config.WithDefaults] has run; NewElector and Run call
// it, so users set only what they mean to change.
type Config struct {
	// Enabled is --leader-elect. This package never reads it: it is for the caller (the
	// controller Manager) to decide whether to run an election at all. Run always elects.
	Enabled bool

	// Namespace of the Lease. Default "kube-system" (kube-controller-manager's).
	Namespace string
	// Name of the Lease; required: it names the thing being led, e.g. "my-controller".
	Name string
	// Identity of this candidate, unique among all candidates for this Lease: a candidate
	// whose identity is the Lease's holder is the leader without asking. Default
	// "<hostname>_<12 random hex digits>", chosen once by WithDefaults.
	Identity string

	// LeaseDuration is how long standbys wait, from the last renewal they observed, before
	// taking over an unrenewed lease: the longest a dead leader goes unreplaced.
	// Default 15s. Stored in the Lease in whole seconds.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps retrying a failed renewal before it gives
	// leadership up. Default 10s.
	RenewDeadline time.Duration
	// RetryPeriod is the pause between attempts to acquire or renew. Default 2s.
	RetryPeriod time.Duration

	// ReleaseOnCancel empties the Lease when Run's ctx ends (or the lease is lost while
	// still ours), so a standby takes over at its next attempt — within (1+JitterFactor)×RetryPeriod,
	// client-go's jittered poll — instead of after a LeaseDuration.
	// ctrlkit releases only after OnStartedLeading has returned, so a standby never starts
	// while the old leader's guarded code still runs. Default false.
	ReleaseOnCancel bool

	// HealthTolerance is how long past an expired, unrenewed lease [Elector.Check] still
	// reports healthy (client-go's HealthzAdaptor timeout). Default 20s.
	HealthTolerance time.Duration
}

// WithDefaults returns c with every zero field (except Name and Enabled) set to its
// default. Identity gets a fresh random suffix each call, so call it once per process.
func (c Config) WithDefaults() Config {
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.Identity == "" {
		c.Identity = defaultIdentity()
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = DefaultRenewDeadline
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = DefaultRetryPeriod
	}
	if c.HealthTolerance == 0 {
		c.HealthTolerance = DefaultHealthTolerance
	}
	return c
}

// defaultIdentity is kube-controller-manager's hostname_<unique> with a shorter suffix; the
// suffix keeps two replicas on one host (or a restarted pod reusing its name) distinct.
func defaultIdentity() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it aborts the program instead)
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "ctrlkit"
	}
	return host + "_" + hex.EncodeToString(b[:])
}

// Validate checks c exactly as it is — it does not apply defaults, so validate
// c.WithDefaults() to check what Run will use. It returns every broken rule, joined in the
// order of the Err variables above, each wrapping its sentinel and naming the values.
func (c Config) Validate() error {
	var errs []error
	add := func(sentinel error, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...))
	}
	if c.LeaseDuration <= c.RenewDeadline {
		add(ErrLeaseDurationTooShort, "leaseDuration %v, renewDeadline %v", c.LeaseDuration, c.RenewDeadline)
	}
	if c.RenewDeadline <= time.Duration(JitterFactor*float64(c.RetryPeriod)) {
		add(ErrRenewDeadlineTooShort, "renewDeadline %v, retryPeriod %v", c.RenewDeadline, c.RetryPeriod)
	}
	if c.LeaseDuration <= 0 {
		add(ErrLeaseDurationNotPositive, "leaseDuration %v", c.LeaseDuration)
	}
	if c.RenewDeadline <= 0 {
		add(ErrRenewDeadlineNotPositive, "renewDeadline %v", c.RenewDeadline)
	}
	if c.RetryPeriod <= 0 {
		add(ErrRetryPeriodNotPositive, "retryPeriod %v", c.RetryPeriod)
	}
	// Only once the plain ordering holds; otherwise it would repeat rule one.
	if stored := c.LeaseDuration.Truncate(time.Second); c.LeaseDuration > c.RenewDeadline && stored <= c.RenewDeadline+c.RetryPeriod {
		add(ErrLeaseDurationUnsafe, "leaseDuration %v is stored as %v, renewDeadline %v + retryPeriod %v = %v",
			c.LeaseDuration, stored, c.RenewDeadline, c.RetryPeriod, c.RenewDeadline+c.RetryPeriod)
	}
	if c.HealthTolerance < 0 {
		add(ErrNegativeHealthTolerance, "healthTolerance %v", c.HealthTolerance)
	}
	if msgs := validation.IsDNS1123Label(c.Namespace); len(msgs) > 0 {
		add(ErrInvalidNamespace, "%q: %s", c.Namespace, strings.Join(msgs, "; "))
	}
	if msgs := validation.IsDNS1123Subdomain(c.Name); len(msgs) > 0 {
		add(ErrInvalidName, "%q: %s", c.Name, strings.Join(msgs, "; "))
	}
	if strings.TrimSpace(c.Identity) == "" {
		add(ErrEmptyIdentity, "identity %q", c.Identity)
	}
	return errors.Join(errs...)
}

// key names the Lease in logs and errors.
func (c Config) key() string { return c.Namespace + "/" + c.Name }
