package leaderelection

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"
)

// configErrors returns the *ConfigErrors Validate joined, in order, failing the test for
// anything else: every error must match ErrInvalidConfig and be a *ConfigError.
func configErrors(t *testing.T, err error) []ConfigError {
	t.Helper()
	require.ErrorIs(t, err, ErrInvalidConfig)
	joined, ok := err.(interface{ Unwrap() []error })
	require.True(t, ok, "Validate joins its errors: %v", err)
	var got []ConfigError
	for _, e := range joined.Unwrap() {
		require.ErrorIs(t, e, ErrInvalidConfig)
		var ce *ConfigError
		require.ErrorAs(t, e, &ce)
		assert.Equal(t, "invalid leader election config: "+ce.Rule, e.Error())
		got = append(got, *ce)
	}
	return got
}

func TestValidate(t *testing.T) {
	valid := fastConfig("a").WithDefaults()
	require.NoError(t, valid.Validate())
	require.NoError(t, Config{Name: "x"}.WithDefaults().Validate(), "defaults are valid")

	cases := []struct {
		name   string
		modify func(*Config)
		want   []ConfigError // exactly these, in order; Rule is a prefix of the message's rule
	}{
		{"lease duration equals renew deadline", func(c *Config) { c.LeaseDuration = c.RenewDeadline }, []ConfigError{
			{"leaseDuration", "leaseDuration 600ms must be greater than renewDeadline 600ms"}}},
		{"lease duration below renew deadline", func(c *Config) { c.LeaseDuration = 500 * time.Millisecond }, []ConfigError{
			{"leaseDuration", "leaseDuration 500ms must be greater than renewDeadline 600ms"}}},
		{"renew deadline within jittered retry", func(c *Config) { c.LeaseDuration, c.RetryPeriod = 2*time.Second, 500*time.Millisecond }, []ConfigError{
			{"renewDeadline", "renewDeadline 600ms must be greater than JitterFactor 1.2 × retryPeriod 500ms = 600ms"}}},
		{"renew deadline equals retry period", func(c *Config) { c.LeaseDuration, c.RetryPeriod = 2*time.Second, c.RenewDeadline }, []ConfigError{
			{"renewDeadline", "renewDeadline 600ms must be greater than JitterFactor 1.2 × retryPeriod 600ms = 720ms"}}},
		{"retry period zero", func(c *Config) { c.RetryPeriod = 0 }, []ConfigError{
			{"retryPeriod", "retryPeriod 0s must be greater than zero"}}},
		{"retry period negative", func(c *Config) { c.RetryPeriod = -time.Second }, []ConfigError{
			{"retryPeriod", "retryPeriod -1s must be greater than zero"}}},
		// With the ordering rules holding, a non-positive renew deadline needs a negative
		// retry period, and a non-positive lease duration needs both (as in client-go).
		{"renew deadline negative", func(c *Config) { c.RenewDeadline, c.RetryPeriod = -time.Millisecond, -time.Second }, []ConfigError{
			{"renewDeadline", "renewDeadline -1ms must be greater than zero"},
			{"retryPeriod", "retryPeriod -1s must be greater than zero"}}},
		{"all negative", func(c *Config) {
			c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = -time.Nanosecond, -2*time.Nanosecond, -time.Second
		}, []ConfigError{
			{"leaseDuration", "leaseDuration -1ns must be greater than zero"},
			{"renewDeadline", "renewDeadline -2ns must be greater than zero"},
			{"retryPeriod", "retryPeriod -1s must be greater than zero"}}},
		{"lease seconds truncate below renew deadline", func(c *Config) {
			c.LeaseDuration, c.RenewDeadline = 1500*time.Millisecond, 1200*time.Millisecond
		}, []ConfigError{{"leaseDuration",
			"leaseDuration 1.5s, stored in whole seconds as 1s, must be greater than renewDeadline 1.2s + retryPeriod 200ms = 1.4s"}}},
		{"sub-second lease", func(c *Config) {
			c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = 900*time.Millisecond, 500*time.Millisecond, 100*time.Millisecond
		}, []ConfigError{{"leaseDuration",
			"leaseDuration 900ms, stored in whole seconds as 0s, must be greater than renewDeadline 500ms + retryPeriod 100ms = 600ms"}}},
		{"lease within renew deadline plus retry period", func(c *Config) {
			c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = 15*time.Second, 14*time.Second, 2*time.Second
		}, []ConfigError{{"leaseDuration",
			"leaseDuration 15s, stored in whole seconds as 15s, must be greater than renewDeadline 14s + retryPeriod 2s = 16s"}}},
		{"negative health tolerance", func(c *Config) { c.HealthTolerance = -time.Second }, []ConfigError{
			{"healthTolerance", "healthTolerance -1s must not be negative"}}},
		{"empty namespace", func(c *Config) { c.Namespace = "" }, []ConfigError{
			{"namespace", `namespace "" must be a DNS-1123 label: `}}},
		{"upper-case namespace", func(c *Config) { c.Namespace = "Kube-System" }, []ConfigError{
			{"namespace", `namespace "Kube-System" must be a DNS-1123 label: a lowercase RFC 1123 label must consist of`}}},
		{"dotted namespace", func(c *Config) { c.Namespace = "a.b" }, []ConfigError{
			{"namespace", `namespace "a.b" must be a DNS-1123 label: `}}},
		{"empty name", func(c *Config) { c.Name = "" }, []ConfigError{
			{"name", `name "" must be a DNS-1123 subdomain: `}}},
		{"underscore name", func(c *Config) { c.Name = "my_controller" }, []ConfigError{
			{"name", `name "my_controller" must be a DNS-1123 subdomain: a lowercase RFC 1123 subdomain must consist of`}}},
		{"overlong name", func(c *Config) { c.Name = strings.Repeat("a", 254) }, []ConfigError{
			{"name", `name "` + strings.Repeat("a", 254) + `" must be a DNS-1123 subdomain: must be no more than 253 characters`}}},
		{"empty identity", func(c *Config) { c.Identity = "" }, []ConfigError{{"identity", `identity "" must not be empty`}}},
		{"blank identity", func(c *Config) { c.Identity = " \t" }, []ConfigError{{"identity", `identity " \t" must not be empty`}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid
			tc.modify(&cfg)
			got := configErrors(t, cfg.Validate())
			require.Len(t, got, len(tc.want), "%v", got)
			for i, w := range tc.want {
				assert.Equal(t, w.Field, got[i].Field)
				assert.True(t, strings.HasPrefix(got[i].Rule, w.Rule), "rule %q, want it to start with %q", got[i].Rule, w.Rule)
			}
		})
	}

	// The zero Config (before defaulting) breaks every rule it can, reported in order:
	// client-go's rules in client-go's order, then ctrlkit's.
	var fields []string
	for _, e := range configErrors(t, Config{}.Validate()) {
		fields = append(fields, e.Field)
	}
	assert.Equal(t, []string{"leaseDuration", "renewDeadline", "leaseDuration", "renewDeadline", "retryPeriod",
		"namespace", "name", "identity"}, fields)
}

func TestValidateMessagesNameTheCulprit(t *testing.T) {
	cfg := fastConfig("a").WithDefaults()
	cfg.Name = "Bad_Name"
	cfg.RetryPeriod = time.Second
	msg := cfg.Validate().Error()
	assert.Contains(t, msg, `name "Bad_Name" must be a DNS-1123 subdomain`)
	assert.Contains(t, msg, "invalid leader election config: renewDeadline 600ms must be greater than JitterFactor 1.2 × retryPeriod 1s = 1.2s")
	assert.Equal(t, strings.ToLower(msg[:1]), msg[:1], "messages start lower-case")
}

func TestWithDefaults(t *testing.T) {
	outsidePod(t)
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
	assert.Regexp(t, "^web-0_[0-9a-f]{12}$", UniqueIdentity("web-0"))
	assert.NotEqual(t, UniqueIdentity("web-0"), UniqueIdentity("web-0"), "each call draws a new suffix")

	set := Config{Namespace: "ns", Name: "x", Identity: "me", LeaseDuration: time.Minute,
		RenewDeadline: 30 * time.Second, RetryPeriod: 5 * time.Second, HealthTolerance: time.Second}
	assert.Equal(t, set, set.WithDefaults(), "set fields are kept")
}

// RequireIdentity makes an empty identity an error, as client-go's NewLeaderElector does, where
// it would otherwise be defaulted; a set one is kept as it is.
func TestRequireIdentity(t *testing.T) {
	cfg := Config{Name: "x", Namespace: "ns", RequireIdentity: true}
	assert.Empty(t, cfg.WithDefaults().Identity, "not defaulted")
	_, err := NewElector(fake.NewClientset(), cfg, Callbacks{})
	require.ErrorIs(t, err, ErrInvalidConfig)
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "identity", ce.Field)

	cfg.Identity = "web-0"
	e, err := NewElector(fake.NewClientset(), cfg, Callbacks{})
	require.NoError(t, err)
	assert.Equal(t, "web-0", e.Identity())
}
