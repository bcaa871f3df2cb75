package leaderelection

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sentinels in Validate's order.
var sentinels = []error{
	ErrLeaseDurationTooShort,
	ErrRenewDeadlineTooShort,
	ErrLeaseDurationNotPositive,
	ErrRenewDeadlineNotPositive,
	ErrRetryPeriodNotPositive,
	ErrLeaseDurationUnsafe,
	ErrNegativeHealthTolerance,
	ErrInvalidNamespace,
	ErrInvalidName,
	ErrEmptyIdentity,
}

func TestValidate(t *testing.T) {
	valid := fastConfig("a").WithDefaults()
	require.NoError(t, valid.Validate())
	require.NoError(t, Config{Name: "x"}.WithDefaults().Validate(), "defaults are valid")

	cases := []struct {
		name   string
		modify func(*Config)
		want   []error // exactly these sentinels, no others
	}{
		{"lease duration equals renew deadline", func(c *Config) { c.LeaseDuration = c.RenewDeadline }, []error{ErrLeaseDurationTooShort}},
		{"lease duration below renew deadline", func(c *Config) { c.LeaseDuration = 500 * time.Millisecond }, []error{ErrLeaseDurationTooShort}},
		{"renew deadline within jittered retry", func(c *Config) { c.LeaseDuration, c.RetryPeriod = 2*time.Second, 500*time.Millisecond }, []error{ErrRenewDeadlineTooShort}},
		{"renew deadline equals retry period", func(c *Config) { c.LeaseDuration, c.RetryPeriod = 2*time.Second, c.RenewDeadline }, []error{ErrRenewDeadlineTooShort}},
		{"retry period zero", func(c *Config) { c.RetryPeriod = 0 }, []error{ErrRetryPeriodNotPositive}},
		{"retry period negative", func(c *Config) { c.RetryPeriod = -time.Second }, []error{ErrRetryPeriodNotPositive}},
		// With the ordering rules holding, a non-positive renew deadline needs a negative
		// retry period, and a non-positive lease duration needs both (as in client-go).
		{"renew deadline negative", func(c *Config) { c.RenewDeadline, c.RetryPeriod = -time.Millisecond, -time.Second }, []error{ErrRenewDeadlineNotPositive, ErrRetryPeriodNotPositive}},
		{"all negative", func(c *Config) {
			c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = -time.Nanosecond, -2*time.Nanosecond, -time.Second
		}, []error{ErrLeaseDurationNotPositive, ErrRenewDeadlineNotPositive, ErrRetryPeriodNotPositive}},
		{"lease seconds truncate below renew deadline", func(c *Config) {
			c.LeaseDuration, c.RenewDeadline = 1500*time.Millisecond, 1200*time.Millisecond
		}, []error{ErrLeaseDurationUnsafe}},
		{"sub-second lease", func(c *Config) {
			c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = 900*time.Millisecond, 500*time.Millisecond, 100*time.Millisecond
		}, []error{ErrLeaseDurationUnsafe}},
		{"lease within renew deadline plus retry period", func(c *Config) {
			c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = 15*time.Second, 14*time.Second, 2*time.Second
		}, []error{ErrLeaseDurationUnsafe}},
		{"negative health tolerance", func(c *Config) { c.HealthTolerance = -time.Second }, []error{ErrNegativeHealthTolerance}},
		{"empty namespace", func(c *Config) { c.Namespace = "" }, []error{ErrInvalidNamespace}},
		{"upper-case namespace", func(c *Config) { c.Namespace = "Kube-System" }, []error{ErrInvalidNamespace}},
		{"dotted namespace", func(c *Config) { c.Namespace = "a.b" }, []error{ErrInvalidNamespace}},
		{"empty name", func(c *Config) { c.Name = "" }, []error{ErrInvalidName}},
		{"underscore name", func(c *Config) { c.Name = "my_controller" }, []error{ErrInvalidName}},
		{"overlong name", func(c *Config) { c.Name = strings.Repeat("a", 254) }, []error{ErrInvalidName}},
		{"empty identity", func(c *Config) { c.Identity = "" }, []error{ErrEmptyIdentity}},
		{"blank identity", func(c *Config) { c.Identity = " \t" }, []error{ErrEmptyIdentity}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid
			tc.modify(&cfg)
			err := cfg.Validate()
			require.Error(t, err)
			for _, s := range sentinels {
				want := false
				for _, w := range tc.want {
					want = want || w == s
				}
				assert.Equal(t, want, errors.Is(err, s), "errors.Is(%v, %v)", err, s)
			}
		})
	}

	// The zero Config (before defaulting) breaks every rule it can, reported in order.
	err := Config{}.Validate()
	joined, ok := err.(interface{ Unwrap() []error })
	require.True(t, ok, "Validate joins its errors")
	var got []error
	for _, e := range joined.Unwrap() {
		for _, s := range sentinels {
			if errors.Is(e, s) {
				got = append(got, s)
			}
		}
	}
	assert.Equal(t, []error{
		ErrLeaseDurationTooShort, ErrRenewDeadlineTooShort,
		ErrLeaseDurationNotPositive, ErrRenewDeadlineNotPositive, ErrRetryPeriodNotPositive,
		ErrInvalidNamespace, ErrInvalidName, ErrEmptyIdentity,
	}, got)
}

func TestValidateMessagesNameTheCulprit(t *testing.T) {
	cfg := fastConfig("a").WithDefaults()
	cfg.Name = "Bad_Name"
	cfg.RetryPeriod = time.Second
	msg := cfg.Validate().Error()
	assert.Contains(t, msg, `"Bad_Name"`)
	assert.Contains(t, msg, "renewDeadline 600ms, retryPeriod 1s")
	assert.Equal(t, strings.ToLower(msg[:1]), msg[:1], "messages start lower-case")
}

func TestWithDefaults(t *testing.T) {
	d := Config{Name: "x"}.WithDefaults()
	assert.Equal(t, DefaultNamespace, d.Namespace)
	assert.Equal(t, 15*time.Second, d.LeaseDuration)
	assert.Equal(t, 10*time.Second, d.RenewDeadline)
	assert.Equal(t, 2*time.Second, d.RetryPeriod)
	assert.Equal(t, 20*time.Second, d.HealthTolerance)
	assert.False(t, d.ReleaseOnCancel)
	assert.False(t, d.Enabled)
	host, err := os.Hostname()
	require.NoError(t, err)
	assert.Regexp(t, "^"+regexp.QuoteMeta(host)+"_[0-9a-f]{12}$", d.Identity)
	assert.NotEqual(t, d.Identity, Config{}.WithDefaults().Identity, "each defaulting draws a new suffix")

	set := Config{Namespace: "ns", Name: "x", Identity: "me", LeaseDuration: time.Minute,
		RenewDeadline: 30 * time.Second, RetryPeriod: 5 * time.Second, HealthTolerance: time.Second}
	assert.Equal(t, set, set.WithDefaults(), "set fields are kept")
}
