package leaderelection

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newFlagSet(cfg *Config) *pflag.FlagSet {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(discard{})
	cfg.AddFlags(fs)
	return fs
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func TestAddFlagsDefaults(t *testing.T) {
	var cfg Config
	fs := newFlagSet(&cfg)
	for name, def := range map[string]string{
		"leader-elect":                    "false",
		"leader-elect-lease-duration":     "15s",
		"leader-elect-renew-deadline":     "10s",
		"leader-elect-retry-period":       "2s",
		"leader-elect-resource-lock":      "leases",
		"leader-elect-resource-namespace": "", // the Pod's, else ctrlkit-system: WithDefaults decides
		"leader-elect-resource-name":      "",
	} {
		f := fs.Lookup(name)
		require.NotNil(t, f, name)
		assert.Equal(t, def, f.DefValue, name)
		assert.NotEmpty(t, f.Usage, name)
	}

	on := Config{Enabled: true, Name: "my-controller", LeaseDuration: time.Minute}
	fs = newFlagSet(&on)
	assert.Equal(t, "true", fs.Lookup("leader-elect").DefValue, "the caller's Enabled is the default")
	assert.Equal(t, "my-controller", fs.Lookup("leader-elect-resource-name").DefValue)
	assert.Equal(t, "1m0s", fs.Lookup("leader-elect-lease-duration").DefValue)
}

func TestAddFlagsParse(t *testing.T) {
	var cfg Config
	fs := newFlagSet(&cfg)
	require.NoError(t, fs.Parse([]string{
		"--leader-elect",
		"--leader-elect-lease-duration=30s",
		"--leader-elect-renew-deadline=20s",
		"--leader-elect-retry-period=3s",
		"--leader-elect-resource-lock=leases",
		"--leader-elect-resource-namespace=ops",
		"--leader-elect-resource-name=my-controller",
	}))
	assert.Equal(t, Config{Enabled: true, Namespace: "ops", Name: "my-controller",
		LeaseDuration: 30 * time.Second, RenewDeadline: 20 * time.Second, RetryPeriod: 3 * time.Second,
		HealthTolerance: DefaultHealthTolerance}, cfg)
	require.NoError(t, cfg.WithDefaults().Validate())
}

func TestAddFlagsErrors(t *testing.T) {
	for _, arg := range []string{
		"--leader-elect-lease-duration=fifteen",
		"--leader-elect-renew-deadline=10",
		"--leader-elect-retry-period=2x",
		"--leader-elect-resource-lock=configmaps",
		"--leader-elect=maybe",
	} {
		var cfg Config
		err := newFlagSet(&cfg).Parse([]string{arg})
		assert.Error(t, err, arg)
	}

	// Rules between values are Validate's: flags parse, Validate names the rule.
	var cfg Config
	require.NoError(t, newFlagSet(&cfg).Parse([]string{"--leader-elect-resource-name=x", "--leader-elect-lease-duration=5s"}))
	err := cfg.WithDefaults().Validate()
	assert.ErrorIs(t, err, ErrInvalidConfig)
	assert.ErrorContains(t, err, "leaseDuration 5s must be greater than renewDeadline 10s")
}

// The flags' defaults are WithDefaults' values, both from setFixedDefaults, but for the
// namespace, which WithDefaults reads from where the process runs.
func TestFlagDefaultsAreWithDefaults(t *testing.T) {
	var cfg Config
	fs := newFlagSet(&cfg)
	d := Config{}.WithDefaults()
	d.Namespace = ""
	for name, want := range map[string]string{
		"leader-elect":                    strconv.FormatBool(d.Enabled),
		"leader-elect-lease-duration":     d.LeaseDuration.String(),
		"leader-elect-renew-deadline":     d.RenewDeadline.String(),
		"leader-elect-retry-period":       d.RetryPeriod.String(),
		"leader-elect-resource-lock":      resourceLock,
		"leader-elect-resource-namespace": d.Namespace,
		"leader-elect-resource-name":      d.Name,
	} {
		assert.Equal(t, want, fs.Lookup(name).DefValue, name)
	}
	// Binding the flags left cfg as WithDefaults would, but for the per-process identity and
	// namespace.
	d.Identity = ""
	assert.Equal(t, d, cfg)
}

// FuzzFlags: any command line either fails to parse or yields a Config whose Validate
// reports only *ConfigErrors matching ErrInvalidConfig; nothing panics.
func FuzzFlags(f *testing.F) {
	f.Add("15s", "10s", "2s", "ctrlkit-system", "ctrl")
	f.Add("1s", "1s", "0s", "", "")
	f.Add("-1h", "1.5s", "1ns", "a.b", "A_B")
	f.Add("9999999999h", "0", "1µs", "x", "y")
	f.Fuzz(func(t *testing.T, lease, renew, retry, ns, name string) {
		var cfg Config
		fs := newFlagSet(&cfg)
		err := fs.Parse([]string{
			"--leader-elect-lease-duration=" + lease,
			"--leader-elect-renew-deadline=" + renew,
			"--leader-elect-retry-period=" + retry,
			"--leader-elect-resource-namespace=" + ns,
			"--leader-elect-resource-name=" + name,
		})
		if err != nil {
			return
		}
		verr := cfg.WithDefaults().Validate()
		if verr == nil {
			return
		}
		for _, e := range verr.(interface{ Unwrap() []error }).Unwrap() {
			var ce *ConfigError
			if !errors.As(e, &ce) || !errors.Is(e, ErrInvalidConfig) || ce.Field == "" || ce.Rule == "" {
				t.Fatalf("Validate returned %#v, not a *ConfigError with a field and a rule", e)
			}
		}
	})
}

// A typed zero is an error, not a silent default; a good command line validates.
func TestValidateFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the message of the one rule broken, "" for none
	}{
		{[]string{"--leader-elect", "--leader-elect-resource-name=ctl"}, ""},
		{[]string{"--leader-elect", "--leader-elect-resource-name=ctl", "--leader-elect-retry-period=0s"},
			"--leader-elect-retry-period: invalid leader election config: retryPeriod 0s must be greater than zero"},
		{[]string{"--leader-elect", "--leader-elect-resource-name=ctl", "--leader-elect-renew-deadline=20s"},
			"--leader-elect-lease-duration: invalid leader election config: leaseDuration 15s must be greater than renewDeadline 20s"},
		{[]string{"--leader-elect"}, `--leader-elect-resource-name: invalid leader election config: name "" must be a DNS-1123 subdomain`},
		{[]string{"--leader-elect", "--leader-elect-resource-name=ctl", "--leader-elect-resource-namespace=Bad_NS"},
			`--leader-elect-resource-namespace: invalid leader election config: namespace "Bad_NS" must be a DNS-1123 label`},
	} {
		var cfg Config
		require.NoError(t, newFlagSet(&cfg).Parse(tc.args))
		err := cfg.ValidateFlags()
		if tc.want == "" {
			assert.NoError(t, err, "%v", tc.args)
			continue
		}
		assert.ErrorIs(t, err, ErrInvalidConfig, "%v", tc.args)
		var ce *ConfigError
		assert.ErrorAs(t, err, &ce, "%v", tc.args)
		assert.Len(t, err.(interface{ Unwrap() []error }).Unwrap(), 1, "%v", tc.args)
		assert.True(t, strings.HasPrefix(err.Error(), tc.want), "%v: %v", tc.args, err)
	}
	// What WithDefaults would hide: Validate after defaulting accepts the typed zero.
	var cfg Config
	require.NoError(t, newFlagSet(&cfg).Parse([]string{"--leader-elect-resource-name=ctl", "--leader-elect-retry-period=0s"}))
	assert.NoError(t, cfg.WithDefaults().Validate())
}
