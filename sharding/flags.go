package sharding

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/ctrlkit/ctrlkit/leaderelection"
)

// envPodName is the environment variable DefaultIdentity reads first: a
// Deployment or StatefulSet sets it from the downward API
// (fieldRef: metadata.name), so each replica joins under its Pod's name.
const envPodName = "POD_NAME"

// DefaultIdentity is the default of --shard-identity: $POD_NAME when set,
// else the host name (a Pod's host name is its name too), lower-cased, since
// an identity is a label value that must also fit a Lease name. It returns
// "" when neither is known; ValidateFlags then names the flag to set.
func DefaultIdentity() string {
	id := os.Getenv(envPodName)
	if id == "" {
		id, _ = os.Hostname()
	}
	return strings.ToLower(id)
}

// flagNames maps a ConfigError's Field to the flag that sets it.
var flagNames = map[string]string{
	"ring":          "--shard-ring",
	"namespace":     "--shard-namespace",
	"identity":      "--shard-identity",
	"leaseDuration": "--shard-lease-duration",
	"renewDeadline": "--shard-renew-deadline",
	"retryPeriod":   "--shard-retry-period",
	"writeQPS":      "--shard-write-qps",
	"writeBurst":    "--shard-write-burst",
	"weight":        "--shard-weight",
}

// AddFlags registers the flags of a sharded binary on fs, bound to c's
// fields, in the shape of leaderelection's flags: --shard-ring (empty, the
// default unless c.Ring is set: not sharded), --shard-namespace,
// --shard-identity (default DefaultIdentity), --shard-lease-duration,
// --shard-renew-deadline and --shard-retry-period, and the ring client's
// write rate, --shard-write-qps and --shard-write-burst, and --shard-weight. Zero fields are first set
// to their defaults (WithDefaults, and DefaultIdentity), so the help text
// shows the values the ring will use — except an empty Namespace, which
// stays empty, as leaderelection's does: its help says what WithDefaults
// makes of it. A malformed duration is reported by fs.Parse; every other
// rule by ValidateFlags.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	ring, identity, namespace := c.Ring, c.Identity, c.Namespace
	*c = c.WithDefaults()
	c.Ring, c.Namespace = ring, namespace
	if identity == "" {
		identity = DefaultIdentity()
	}
	c.Identity = identity
	fs.StringVar(&c.Ring, "shard-ring", c.Ring, ""+
		"Name of the ring this replica joins to share the controller's objects with the other "+
		"replicas of the binary (a DNS-1123 label of at most 51 characters: it names the member "+
		"Leases and the label shard.ctrlkit.dev/<ring> on the objects). Empty: not sharded.")
	fs.StringVar(&c.Namespace, "shard-namespace", c.Namespace, ""+
		"Namespace of the ring's Leases (one per member, <ring>.<identity>, and <ring>-sharder). "+
		"Every replica must use the same. Empty: the namespace of the Pod this process runs in "+
		"(read from "+leaderelection.ServiceAccountNamespaceFile+"), else "+strconv.Quote(leaderelection.DefaultNamespace)+", "+
		"as for --leader-elect-resource-namespace.")
	fs.StringVar(&c.Identity, "shard-identity", c.Identity, ""+
		"This replica's name in the ring, unique among the live replicas: the value of the "+
		"assignment label on the objects it owns. Default: $"+envPodName+", else the host name, "+
		"lower-cased.")
	fs.DurationVar(&c.LeaseDuration, "shard-lease-duration", c.LeaseDuration, ""+
		"How long after the last renewal of a member's Lease it observed the sharder waits "+
		"before it gives the member's objects to the others. Every replica must use the same.")
	fs.DurationVar(&c.RenewDeadline, "shard-renew-deadline", c.RenewDeadline, ""+
		"How long a member retries a failed renewal of its Lease before it stops its "+
		"controllers. Must be less than the lease duration.")
	fs.DurationVar(&c.RetryPeriod, "shard-retry-period", c.RetryPeriod, ""+
		"The pause between renewals of a member's Lease, and between the sharder's checks of "+
		"the members' renewals.")
	fs.Float32Var(&c.WriteQPS, "shard-write-qps", c.WriteQPS, ""+
		"Requests per second this replica's ring client may send: the sharder's label patches "+
		"and reads, and the drain acknowledgements, apart from --kube-api-qps. Assigning or "+
		"moving N objects takes one to three patches each.")
	fs.IntVar(&c.WriteBurst, "shard-write-burst", c.WriteBurst, ""+
		"Burst of the ring client's token bucket (--shard-write-qps).")
	fs.IntVar(&c.Weight, "shard-weight", c.Weight, ""+
		"This replica's share of the ring against the others': a replica of weight 2 is given "+
		"about twice the objects of one of weight 1 (1 to "+strconv.Itoa(MaxWeight)+").")
}

// Sharded reports whether a ring is named: with AddFlags, whether
// --shard-ring was given.
func (c Config) Sharded() bool { return c.Ring != "" }

// ValidateFlags checks a Config that AddFlags bound and fs.Parse filled,
// when it names a ring (without one it returns nil: the binary is not
// sharded). The durations are checked as given (a zero was typed and is an
// error, not the default), the namespace with its default. Each broken rule
// is an error naming the flag, wrapping the *ConfigError (matching
// ErrInvalidConfig); several are joined.
func (c Config) ValidateFlags() error {
	if !c.Sharded() {
		return nil
	}
	d := c.WithDefaults()
	d.LeaseDuration, d.RenewDeadline, d.RetryPeriod = c.LeaseDuration, c.RenewDeadline, c.RetryPeriod
	d.WriteQPS, d.WriteBurst, d.Weight = c.WriteQPS, c.WriteBurst, c.Weight
	errs := flatten(d.Validate())
	if c.Weight == 0 {
		errs = append(errs, &ConfigError{Field: "weight", Rule: fmt.Sprintf("weight must be between 1 and %d", MaxWeight)})
	}
	// A zero typed on the command line is not the default: it would stop
	// the ring's writes.
	if c.WriteQPS == 0 {
		errs = append(errs, &ConfigError{Field: "writeQPS", Rule: "write QPS must be positive"})
	}
	if c.WriteBurst == 0 {
		errs = append(errs, &ConfigError{Field: "writeBurst", Rule: "write burst must be positive"})
	}
	if len(errs) == 0 {
		return nil
	}
	var out []error
	for _, e := range errs {
		var ce *ConfigError
		if errors.As(e, &ce) {
			if flag, ok := flagNames[ce.Field]; ok {
				out = append(out, fmt.Errorf("%s: %w", flag, e))
				continue
			}
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}
