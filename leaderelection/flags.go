package leaderelection

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/pflag"
)

// AddFlags registers kube-controller-manager's leader-election flags on fs, bound to c's
// fields. Zero durations are first set to the defaults WithDefaults applies, so the help text
// shows the values Run will use; set c.Enabled (and c.Name) before calling to choose their
// defaults. An empty Namespace stays empty, and --leader-elect-resource-namespace's help says
// what WithDefaults makes of it (DefaultLeaseNamespace: the Pod's namespace, else
// "ctrlkit-system"), so the help text is the same wherever it is printed. A malformed
// duration is reported by fs.Parse; rules between values (such as lease duration > renew
// deadline) are left to Validate.
//
// --leader-elect-resource-lock is accepted for command-line compatibility, but only with
// its one supported value, "leases".
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	c.setFixedDefaults()
	fs.BoolVar(&c.Enabled, "leader-elect", c.Enabled, ""+
		"Start a leader election client and gain leadership before executing the main loop. "+
		"Enable this when running replicated components for high availability.")
	fs.DurationVar(&c.LeaseDuration, "leader-elect-lease-duration", c.LeaseDuration, ""+
		"The duration that non-leader candidates will wait after observing a leadership renewal "+
		"until attempting to acquire leadership of a led but unrenewed leader slot. This is "+
		"effectively the maximum duration that a leader can be stopped before it is replaced by "+
		"another candidate. This is only applicable if leader election is enabled.")
	fs.DurationVar(&c.RenewDeadline, "leader-elect-renew-deadline", c.RenewDeadline, ""+
		"The interval between attempts by the acting master to renew a leadership slot before it "+
		"stops leading. This must be less than the lease duration. This is only applicable if "+
		"leader election is enabled.")
	fs.DurationVar(&c.RetryPeriod, "leader-elect-retry-period", c.RetryPeriod, ""+
		"The duration the clients should wait between attempting acquisition and renewal of a "+
		"leadership. This is only applicable if leader election is enabled.")
	fs.Var(resourceLockFlag{}, "leader-elect-resource-lock", ""+
		"The type of resource object that is used for locking during leader election. "+
		"Supported options are '"+resourceLock+"'.")
	fs.StringVar(&c.Name, "leader-elect-resource-name", c.Name, ""+
		"The name of resource object that is used for locking during leader election.")
	fs.StringVar(&c.Namespace, "leader-elect-resource-namespace", c.Namespace, ""+
		"The namespace of resource object that is used for locking during leader election. "+
		"Empty: the namespace of the Pod this process runs in (read from "+ServiceAccountNamespaceFile+"), "+
		"else "+strconv.Quote(DefaultNamespace)+".")
}

// ValidateFlags checks a Config that AddFlags bound and fs.Parse filled: the durations
// exactly as given (AddFlags put the defaults in before parsing, so a zero here was typed and
// is an error, where WithDefaults would quietly restore the default), everything else with
// WithDefaults applied (the identity, for one, has no flag). Each broken rule is an error
// that starts with the flag's name ("--leader-elect-retry-period: invalid leader election
// config: ...") and wraps the *ConfigError (matching ErrInvalidConfig); several are joined.
// Call it after Parse when c.Enabled is set.
func (c Config) ValidateFlags() error {
	d := c.WithDefaults()
	d.LeaseDuration, d.RenewDeadline, d.RetryPeriod = c.LeaseDuration, c.RenewDeadline, c.RetryPeriod
	err := d.Validate()
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return err
	}
	var out []error
	for _, e := range j.Unwrap() {
		var ce *ConfigError
		if errors.As(e, &ce) && flagNames[ce.Field] != "" {
			e = fmt.Errorf("%s: %w", flagNames[ce.Field], e)
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// flagNames maps a ConfigError's Field to the flag AddFlags binds it to.
var flagNames = map[string]string{
	"leaseDuration": "--leader-elect-lease-duration",
	"renewDeadline": "--leader-elect-renew-deadline",
	"retryPeriod":   "--leader-elect-retry-period",
	"namespace":     "--leader-elect-resource-namespace",
	"name":          "--leader-elect-resource-name",
}

// resourceLockFlag accepts only resourceLock: every other lock kind was removed from client-go.
type resourceLockFlag struct{}

func (resourceLockFlag) String() string { return resourceLock }
func (resourceLockFlag) Type() string   { return "string" }
func (resourceLockFlag) Set(v string) error {
	if v != resourceLock {
		return fmt.Errorf("unsupported resource lock %q: only %q is supported", v, resourceLock)
	}
	return nil
}
