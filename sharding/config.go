package sharding

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/internal/leasetiming"
	"github.com/ctrlkit/ctrlkit/leaderelection"
)

// Label and annotation names. The ring's name is the suffix of every
// per-ring key, so several rings can shard the same objects independently.
const (
	// labelPrefix prefixes the assignment label: shard.ctrlkit.dev/<ring>.
	labelPrefix = "shard.ctrlkit.dev/"
	// drainLabelPrefix prefixes the drain label: drain.shard.ctrlkit.dev/<ring>.
	drainLabelPrefix = "drain.shard.ctrlkit.dev/"
	// RingLabel marks a member Lease with the name of its ring.
	RingLabel = "lease.shard.ctrlkit.dev/ring"
	// weightAnnotation holds a member's Config.Weight on its Lease when it
	// is not 1 (MemberWeight reads it).
	weightAnnotation = "lease.shard.ctrlkit.dev/weight"
	// barrierSuffix ends the children-barrier annotation:
	// shard.ctrlkit.dev/<ring>-children-rv.
	barrierSuffix = "-children-rv"
	// holderSuffix ends the holder annotation: shard.ctrlkit.dev/<ring>-holder.
	holderSuffix = "-holder"
	// sharderSuffix ends the name of the sharder's election Lease: <ring>-sharder.
	sharderSuffix = "-sharder"
	// slotsSuffix and servingSuffix end the slot annotations of a member
	// Lease in server-side mode: shard.ctrlkit.dev/<ring>-slots (written by
	// the sharder) and shard.ctrlkit.dev/<ring>-serving (by the member).
	slotsSuffix   = "-slots"
	servingSuffix = "-serving"
)

// maxRingLength is the longest ring name: the barrier annotation's name part,
// <ring>-children-rv, must fit in a label name's 63 characters.
const maxRingLength = validation.LabelValueMaxLength - len(barrierSuffix)

// Defaults of Config, those of leader election (kube-controller-manager's).
const (
	defaultLeaseDuration = leasetiming.DefaultLeaseDuration
	defaultRenewDeadline = leasetiming.DefaultRenewDeadline
	defaultRetryPeriod   = leasetiming.DefaultRetryPeriod
)

// Defaults of the ring's write rate (Config.WriteQPS and WriteBurst): a
// member's ring client (the sharder's label patches and reads, the
// dispatchers' drain acknowledgements) has a token bucket of its own, well
// above a controller's 20 QPS, since assigning or moving N objects costs one
// to three small patches each. docs/performance.md ("Sharding at scale") has
// what the API server sustained when it was chosen.
const (
	defaultWriteQPS   = 250
	defaultWriteBurst = 500
)

// ErrInvalidConfig is matched (errors.Is) by every error reporting a Config
// that breaks a rule; errors.As with a *ConfigError gets the field.
var ErrInvalidConfig = errors.New("invalid sharding config")

// ConfigError is one broken configuration rule.
type ConfigError struct {
	// Field is the culprit: "ring", "namespace", "identity", "leaseDuration",
	// "renewDeadline", "retryPeriod", "writeQPS", "writeBurst", "weight", "mode" or "hashField", or an option named by the function
	// that reports it.
	Field string
	// Rule states the rule with the value that broke it.
	Rule string
}

func (e *ConfigError) Error() string { return ErrInvalidConfig.Error() + ": " + e.Rule }

// Is makes errors.Is(err, ErrInvalidConfig) true.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// Config names a ring and this process's place in it. Every member of a ring
// must use the same Ring, Namespace and durations; Identity is per process.
type Config struct {
	// Ring names the ring: it is the suffix of the assignment label
	// (shard.ctrlkit.dev/<ring>) and the prefix of the member Leases
	// (<ring>.<identity>) and of the sharder's Lease (<ring>-sharder). It
	// must be a DNS-1123 label (it is also part of Lease names) of at most
	// 51 characters (the barrier annotation, <ring>-children-rv, must fit a
	// label name's 63). Required.
	Ring string
	// Namespace holds the Leases. Default leaderelection.DefaultLeaseNamespace(), as for
	// leader election: the namespace of the Pod the process runs in, else "ctrlkit-system"
	// (a Manager then checks at Start that it exists, naming --shard-namespace if not).
	Namespace string
	// Identity names this member: the value of the assignment label on the
	// objects it owns. It must be a valid label value that can also end a
	// Lease name: lower-case alphanumerics, '-' and '.', starting and ending
	// with an alphanumeric, at most 63 characters. A Pod's name is a good
	// choice. Required.
	Identity string
	// Weight is this member's share of the ring against the others': a
	// member of weight 2 is given about twice the keys (or slots, or
	// clusters) of a member of weight 1, for replicas of unequal size.
	// Published on the member Lease; members may differ. 0 means 1; at
	// most MaxWeight.
	Weight int

	// LeaseDuration is how long the sharder waits, from the last renewal of
	// a member Lease it observed, before it takes the member for dead and
	// gives its keys to others. Default 15s.
	LeaseDuration time.Duration
	// RenewDeadline is how long a member keeps retrying a failed renewal
	// before it stops its controllers. Default 10s.
	RenewDeadline time.Duration
	// RetryPeriod is the pause between renewals. Default 2s.
	RetryPeriod time.Duration

	// WriteQPS and WriteBurst are the token bucket of each of this member's
	// ring clients (NewRingClient: the sharder's label patches and children
	// lists, the dispatchers' drain acknowledgements; NewLeaseClient: the
	// ring's Leases), apart from the controllers' own client. Per process,
	// not per ring. Defaults 250 QPS and a burst of 500. A metadata client given to NewSharder or the
	// Manager (ShardingOptions.Metadata) keeps its own limiter: it is the
	// write rate then.
	WriteQPS   float32
	WriteBurst int

	// Mode is how the members' shares are told apart: ModeLabels (the
	// default), an assignment label the sharder writes on every object, or
	// ModeServer, slots of the API server's shard hash recorded in the
	// member Leases, which the members' informers select with
	// ListOptions.ShardSelector and no object is written. ModeServer needs
	// the API server's alpha ShardedListAndWatch gate; a Manager that finds
	// the field not served runs the ring in ModeLabels (see
	// docs/design/sharding.md). Every member must use the same Mode.
	Mode Mode
	// HashField is what a ModeServer ring hashes: HashUID (the default) or
	// HashNamespace, under which children follow their owner.
	HashField HashField
}

// Mode is a ring's way of telling the members' shares apart (Config.Mode).
type Mode string

const (
	// ModeLabels: an assignment label on every object.
	ModeLabels Mode = "labels"
	// ModeServer: hash slots recorded in the member Leases and selected by
	// the API server (alpha).
	ModeServer Mode = "server"
)

// WithDefaults returns c with every zero field except Ring and Identity set
// to its default.
func (c Config) WithDefaults() Config {
	if c.Namespace == "" {
		c.Namespace = leaderelection.DefaultLeaseNamespace()
	}
	t := c.timings().WithDefaults()
	c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = t.LeaseDuration, t.RenewDeadline, t.RetryPeriod
	if c.WriteQPS == 0 {
		c.WriteQPS = defaultWriteQPS
	}
	if c.WriteBurst == 0 {
		c.WriteBurst = defaultWriteBurst
	}
	if c.Mode == "" {
		c.Mode = ModeLabels
	}
	if c.Weight == 0 {
		c.Weight = 1
	}
	if c.HashField == "" {
		c.HashField = HashUID
	}
	return c
}

// timings are c's durations: leader election's, with its defaults and rules
// (internal/leasetiming), since member Leases are renewed and judged the
// same way.
func (c Config) timings() leasetiming.Timings {
	return leasetiming.Timings{LeaseDuration: c.LeaseDuration, RenewDeadline: c.RenewDeadline, RetryPeriod: c.RetryPeriod}
}

// Validate checks c as it is (validate c.WithDefaults() to check what the
// ring will use) and returns every broken rule, each a *ConfigError, joined.
// The duration rules are leader election's (internal/leasetiming), since
// member Leases are renewed and judged the same way.
func (c Config) Validate() error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, &ConfigError{Field: field, Rule: fmt.Sprintf(format, args...)})
	}
	if msgs := validation.IsDNS1123Label(c.Ring); len(msgs) > 0 {
		add("ring", "ring %q must be a DNS-1123 label, as it names Leases and ends label keys: %s", c.Ring, strings.Join(msgs, "; "))
	} else if len(c.Ring) > maxRingLength {
		add("ring", "ring %q is %d characters, more than %d (the annotation %s<ring>%s must be a valid label key)",
			c.Ring, len(c.Ring), maxRingLength, labelPrefix, barrierSuffix)
	}
	if msgs := validation.IsValidLabelValue(c.Identity); c.Identity == "" || len(msgs) > 0 {
		if c.Identity == "" {
			msgs = append(msgs, "must not be empty")
		}
		add("identity", "identity %q must be a valid label value: %s", c.Identity, strings.Join(msgs, "; "))
	} else if msgs := validation.IsDNS1123Subdomain(c.Identity); len(msgs) > 0 {
		add("identity", "identity %q must also be usable in the Lease name <ring>.<identity> (lower-case alphanumerics, '-' and '.'): %s",
			c.Identity, strings.Join(msgs, "; "))
	}
	for _, v := range c.timings().Validate() {
		add(v.Field, "%s", v.Rule)
	}
	if msgs := validation.IsDNS1123Label(c.Namespace); len(msgs) > 0 {
		add("namespace", "namespace %q must be a DNS-1123 label: %s", c.Namespace, strings.Join(msgs, "; "))
	}
	// Zero is the default (WithDefaults); a negative rate would turn the
	// limiter off, which a typo must not do.
	if q := float64(c.WriteQPS); q < 0 {
		add("writeQPS", "write QPS %v must not be negative", c.WriteQPS)
	} else if math.IsNaN(q) || math.IsInf(q, 0) {
		add("writeQPS", "write QPS %v must be a finite number", c.WriteQPS)
	}
	if c.WriteBurst < 0 {
		add("writeBurst", "write burst %d must not be negative", c.WriteBurst)
	}
	if c.Weight < 0 || c.Weight > MaxWeight {
		add("weight", "weight %d must be between 1 and %d (0: 1)", c.Weight, MaxWeight)
	}
	switch c.Mode {
	case "", ModeLabels, ModeServer:
	default:
		add("mode", "mode %q must be %q or %q", c.Mode, ModeLabels, ModeServer)
	}
	switch c.HashField {
	case "", HashUID, HashNamespace:
	default:
		add("hashField", "hash field %q must be %q or %q (the fields the API server hashes)", c.HashField, HashUID, HashNamespace)
	}
	return errors.Join(errs...)
}

// election is the leader-election configuration of a Lease of this ring
// named name, held by this member.
func (c Config) election(name string) leaderelection.Config {
	return leaderelection.Config{
		Namespace:       c.Namespace,
		Name:            name,
		Identity:        c.Identity,
		LeaseDuration:   c.LeaseDuration,
		RenewDeadline:   c.RenewDeadline,
		RetryPeriod:     c.RetryPeriod,
		HealthTolerance: leaderelection.DefaultHealthTolerance,
	}
}

func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// Label is the assignment label of ring: shard.ctrlkit.dev/<ring>.
func Label(ring string) string { return labelPrefix + ring }

// DrainLabel is the drain label of ring: drain.shard.ctrlkit.dev/<ring>.
func DrainLabel(ring string) string { return drainLabelPrefix + ring }

// barrierAnnotation is the children-barrier annotation of ring:
// shard.ctrlkit.dev/<ring>-children-rv.
func barrierAnnotation(ring string) string { return labelPrefix + ring + barrierSuffix }

// HolderAnnotation is the annotation naming the member process an object of
// ring is assigned to: the holder identity of the member's Lease (its
// identity and a per-process suffix) when the sharder wrote the assignment.
// A process restarted with the same identity does not reconcile the objects
// assigned to its former incarnation until the sharder has assigned them
// again.
func HolderAnnotation(ring string) string { return labelPrefix + ring + holderSuffix }

// IdentityOfHolder returns the ring identity of a Lease holder of the ring:
// a member Lease's holder, the sharder Lease's or a HolderAnnotation are
// <identity>_<12 hex digits> (leaderelection.UniqueIdentity, one suffix per
// process), and an identity has no '_'. A holder without a suffix is
// returned as it is.
func IdentityOfHolder(holder string) string {
	id, _, _ := strings.Cut(holder, "_")
	return id
}

// Selector is the label selector of the objects assigned to identity in
// ring, for informer.WithLabelSelector.
func Selector(ring, identity string) string { return Label(ring) + "=" + identity }

// memberLeaseName is the name of identity's Lease in ring. A ring name has no
// dot, so the first dot separates the ring from the identity and names of
// different rings never collide; the sharder's Lease has no dot.
func memberLeaseName(ring, identity string) string { return ring + "." + identity }

// identityOf returns the identity of a member Lease of ring by its name.
func identityOf(ring, leaseName string) (string, bool) {
	return strings.CutPrefix(leaseName, ring+".")
}

// NewRingClient returns the ring's metadata client over restCfg, with the
// ring's write rate (c.WriteQPS and c.WriteBurst, defaults applied) in place of
// restCfg's QPS, Burst and RateLimiter: the client the sharder and the
// dispatchers write with (manager.ShardingOptions.Metadata). restCfg is not
// changed.
func NewRingClient(restCfg *rest.Config, c Config) (metadata.Interface, error) {
	rc, c, err := ringConfig(restCfg, c)
	if err != nil {
		return nil, err
	}
	meta, err := metadata.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("sharding: ring %q: metadata client for %s: %w", c.Ring, restCfg.Host, err)
	}
	return meta, nil
}

// NewLeaseClient returns the clientset of the ring's Leases over restCfg,
// with the ring's write rate as NewRingClient's: the member's renewals, the
// sharder's election and Lease reads, and a server-side ring's slot
// records go through it, apart from the controllers' client, so that a
// burst of controller writes never delays a renewal or a handover (as
// kube-controller-manager gives leader election a client of its own).
// restCfg is not changed.
func NewLeaseClient(restCfg *rest.Config, c Config) (kubernetes.Interface, error) {
	rc, c, err := ringConfig(restCfg, c)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("sharding: ring %q: Lease client for %s: %w", c.Ring, restCfg.Host, err)
	}
	return cs, nil
}

// ringConfig is a copy of restCfg with the ring's write rate.
func ringConfig(restCfg *rest.Config, c Config) (*rest.Config, Config, error) {
	if restCfg == nil {
		return nil, c, &ConfigError{Field: "restConfig", Rule: "rest config must not be nil"}
	}
	c = c.WithDefaults()
	if c.WriteQPS < 0 || c.WriteBurst < 0 {
		return nil, c, c.Validate()
	}
	rc := rest.CopyConfig(restCfg)
	// The ring's own write rate, apart from the controllers' client: a burst of
	// assignments or moves must not wait on --kube-api-qps.
	rc.QPS, rc.Burst, rc.RateLimiter = c.WriteQPS, c.WriteBurst, nil
	return rc, c, nil
}
