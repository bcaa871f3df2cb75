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
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/ctrlkit/ctrlkit/internal/leasetiming"
)

// Defaults of the durations are kube-controller-manager's (component-base's
// LeaderElectionConfiguration and the 20 s watchdog kube-controller-manager hands to its healthz
// adaptor). WithDefaults applies them to zero fields, and AddFlags does the same before it
// registers them as the flags' defaults.
const (
	DefaultLeaseDuration   = leasetiming.DefaultLeaseDuration
	DefaultRenewDeadline   = leasetiming.DefaultRenewDeadline
	DefaultRetryPeriod     = leasetiming.DefaultRetryPeriod
	DefaultHealthTolerance = 20 * time.Second
	// DefaultNamespace is the Lease's namespace when the process does not run in a Pod: the
	// namespace every manifest ctrlkit ships (examples/*/deploy) deploys to and grants the
	// Lease in. In a Pod the default is the Pod's namespace: see DefaultLeaseNamespace.
	DefaultNamespace = "ctrlkit-system"
)

// ServiceAccountNamespaceFile is where the kubelet mounts the namespace of a Pod's
// ServiceAccount, which is the Pod's namespace. client-go's in-cluster config and
// controller-runtime's leader election read it too.
const ServiceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// namespaceFile is the file DefaultLeaseNamespace reads; tests point it at files of their own.
var namespaceFile = ServiceAccountNamespaceFile

// PodNamespaceEnv is the environment variable that names the Pod's namespace when set (the
// downward API's metadata.namespace, as the shipped Deployments set it); client-go's
// in-cluster config reads it before ServiceAccountNamespaceFile too.
const PodNamespaceEnv = "POD_NAMESPACE"

// DefaultLeaseNamespace is the default of Config.Namespace, and of the sharding package's
// Leases: the namespace of the Pod this process runs in, from $POD_NAMESPACE or else
// ServiceAccountNamespaceFile (as client-go's in-cluster config and controller-runtime's
// leader election find it), so the Lease lives next to the Role a deployment grants in its
// own namespace; outside a Pod (neither set), DefaultNamespace.
func DefaultLeaseNamespace() string {
	if ns := strings.TrimSpace(os.Getenv(PodNamespaceEnv)); ns != "" {
		return ns
	}
	return namespaceFrom(namespaceFile)
}

// namespaceFrom reads a namespace file: its content without surrounding white space, or
// DefaultNamespace when it cannot be read or is empty. A file that names no valid namespace
// is left to Validate, which names the value.
func namespaceFrom(path string) string {
	b, err := os.ReadFile(path)
	if ns := strings.TrimSpace(string(b)); err == nil && ns != "" {
		return ns
	}
	return DefaultNamespace
}

// EventReasonLeaderElection is the reason of the events Config.EventRecorder records, client-go's.
const EventReasonLeaderElection = "LeaderElection"

// resourceLock is the one lock kind client-go still has, the only value
// --leader-elect-resource-lock accepts and its default.
const resourceLock = "leases"

// JitterFactor is client-go's: a candidate waits between RetryPeriod and
// (1+JitterFactor)×RetryPeriod between attempts, so RenewDeadline must exceed
// JitterFactor×RetryPeriod for the leader to get more than one renewal attempt.
const JitterFactor = leasetiming.JitterFactor

// ErrInvalidConfig is matched (errors.Is) by every error that reports a configuration that
// breaks a rule: from Validate, ValidateFlags, NewElector and Run. The message names the rule
// and the values, e.g. "invalid leader election config: leaseDuration 1s must be greater than
// renewDeadline 2s"; errors.As with a *ConfigError gets the field.
var ErrInvalidConfig = errors.New("invalid leader election config")

// ConfigError is one broken configuration rule. Validate joins one per broken rule
// (errors.Join); each matches ErrInvalidConfig.
type ConfigError struct {
	// Field is the culprit, named as in Config's documentation in lower camel case
	// ("leaseDuration", "renewDeadline", "retryPeriod", "healthTolerance", "namespace",
	// "name", "identity"), or "client" for a nil client given to NewElector or Run. A rule
	// between two fields is reported on the first of them.
	Field string
	// Rule states the rule with the values that broke it, e.g. "leaseDuration 1s must be
	// greater than renewDeadline 2s".
	Rule string
}

func (e *ConfigError) Error() string { return ErrInvalidConfig.Error() + ": " + e.Rule }

// Is makes errors.Is(err, ErrInvalidConfig) true.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// Config says which Lease to contend for and how. The zero value of every field but Name
// means its documented default once [Config.WithDefaults] has run; NewElector and Run call
// it, so users set only what they mean to change.
type Config struct {
	// Enabled is --leader-elect. This package never reads it: it is for the caller (the
	// controller Manager) to decide whether to run an election at all. Run always elects.
	Enabled bool

	// Namespace of the Lease. Default DefaultLeaseNamespace(): the namespace of the Pod the
	// process runs in, else DefaultNamespace ("ctrlkit-system"). kube-controller-manager's
	// "kube-system" is not the default: a controller's Role for its Lease lives in its own
	// namespace, as in every manifest ctrlkit ships. Outside a Pod, a manager.Manager checks
	// at Start that the defaulted namespace exists and names --leader-elect-resource-namespace if not.
	Namespace string
	// Name of the Lease; required: it names the thing being led, e.g. "my-controller".
	Name string
	// Identity of this candidate, unique among all candidates for this Lease: a candidate
	// whose identity is the Lease's holder is the leader without asking. Default
	// "<hostname>_<12 random hex digits>", chosen once by WithDefaults.
	//
	// An empty Identity means the default: a string field cannot tell one left unset from
	// one set to "" (say from an unset $POD_NAME). Set RequireIdentity to refuse "" instead,
	// as client-go's NewLeaderElector does. An Identity of white space only is always
	// refused (ErrInvalidConfig, field "identity").
	Identity string
	// RequireIdentity says Identity is set on purpose: an empty one is then an error
	// (ErrInvalidConfig, field "identity") rather than replaced by the default. Set it when
	// Identity comes from somewhere that may be empty, such as the Pod's name from the
	// downward API, so that a missing value stops the process instead of electing it under
	// a made-up name.
	RequireIdentity bool

	// EventRecorder, when set, records client-go's leader-election events on the Lease, as
	// kube-controller-manager does: "<identity> became leader" when this candidate acquires
	// it and "<identity> stopped leading" when its leadership ends, of type Normal and reason
	// EventReasonLeaderElection. A client-go record.EventRecorder fits. nil records none.
	EventRecorder resourcelock.EventRecorder

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
	// while the old leader's guarded code still runs. The release's reads and writes give
	// up together after min(RenewDeadline, 2×RetryPeriod), 4 s by default, leaving the
	// Lease to expire: with the API server unreachable, a shutdown waits no longer than
	// that for it. Default false.
	ReleaseOnCancel bool

	// HealthTolerance is how long past an expired, unrenewed lease [Elector.Check] still
	// reports healthy (client-go's HealthzAdaptor timeout). Default 20s.
	HealthTolerance time.Duration
}

// WithDefaults returns c with every zero field (except Name, Enabled, and Identity when
// RequireIdentity is set) set to its default. Identity gets a fresh random suffix each call,
// so call it once per process.
func (c Config) WithDefaults() Config {
	c.setFixedDefaults()
	if c.Namespace == "" {
		c.Namespace = DefaultLeaseNamespace()
	}
	if c.Identity == "" && !c.RequireIdentity {
		c.Identity = defaultIdentity()
	}
	return c
}

// setFixedDefaults sets every zero field whose default does not depend on the process. It is
// the one place those defaults are applied: WithDefaults (which adds the Namespace, read from
// where the process runs, and the per-process Identity) and AddFlags (whose help text shows
// them) both call it.
func (c *Config) setFixedDefaults() {
	c.setTimings(c.timings().WithDefaults())
	if c.HealthTolerance == 0 {
		c.HealthTolerance = DefaultHealthTolerance
	}
}

// defaultIdentity is kube-controller-manager's hostname_<unique> with a shorter suffix.
func defaultIdentity() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "ctrlkit"
	}
	return UniqueIdentity(host)
}

// UniqueIdentity returns name + "_" + 12 random hex digits, a fresh value on every call: the
// Identity of a candidate whose name others may share. Two replicas on one host, or a Pod
// restarted under its name while its former process still runs behind a partition, would
// otherwise each read the other's holder as their own and both lead. The default Identity is
// UniqueIdentity(hostname), as kube-controller-manager's is hostname_<UUID>; package sharding
// makes its member and sharder holders so from the ring identity.
func UniqueIdentity(name string) string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it aborts the program instead)
	return name + "_" + hex.EncodeToString(b[:])
}

// Validate checks c exactly as it is — it does not apply defaults, so validate
// c.WithDefaults() to check what Run will use. It returns every broken rule as a *ConfigError
// (matching ErrInvalidConfig), joined with errors.Join. The order is client-go's for its rules
// (leaseDuration > renewDeadline, renewDeadline > JitterFactor × retryPeriod, then each
// duration > 0), then ctrlkit's: the stored leaseDuration > renewDeadline + retryPeriod,
// healthTolerance >= 0, the namespace, the name and the identity.
func (c Config) Validate() error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, &ConfigError{Field: field, Rule: fmt.Sprintf(format, args...)})
	}
	for _, v := range c.timings().Validate() {
		add(v.Field, "%s", v.Rule)
	}
	if c.HealthTolerance < 0 {
		add("healthTolerance", "healthTolerance %v must not be negative", c.HealthTolerance)
	}
	if msgs := validation.IsDNS1123Label(c.Namespace); len(msgs) > 0 {
		add("namespace", "namespace %q must be a DNS-1123 label: %s", c.Namespace, strings.Join(msgs, "; "))
	}
	if msgs := validation.IsDNS1123Subdomain(c.Name); len(msgs) > 0 {
		add("name", "name %q must be a DNS-1123 subdomain: %s", c.Name, strings.Join(msgs, "; "))
	}
	if strings.TrimSpace(c.Identity) == "" {
		add("identity", "identity %q must not be empty", c.Identity)
	}
	return errors.Join(errs...)
}

// timings are c's durations, whose defaults and rules leasetiming holds for sharding's Leases too.
func (c Config) timings() leasetiming.Timings {
	return leasetiming.Timings{LeaseDuration: c.LeaseDuration, RenewDeadline: c.RenewDeadline, RetryPeriod: c.RetryPeriod}
}

func (c *Config) setTimings(t leasetiming.Timings) {
	c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = t.LeaseDuration, t.RenewDeadline, t.RetryPeriod
}

// key names the Lease in logs and errors.
func (c Config) key() string { return c.Namespace + "/" + c.Name }
