package sharding

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

func validConfig() Config {
	return Config{Ring: "web", Identity: "web-7d9f8b6c5-x2x8z", LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 300 * time.Millisecond}.WithDefaults()
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, validConfig().Validate())
	long := strings.Repeat("r", maxRingLength+1)
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		field string
		says  string
	}{
		{"empty ring", func(c *Config) { c.Ring = "" }, "ring", "DNS-1123 label"},
		{"ring with a dot", func(c *Config) { c.Ring = "a.b" }, "ring", `ring "a.b"`},
		{"upper-case ring", func(c *Config) { c.Ring = "Web" }, "ring", "DNS-1123"},
		{"long ring", func(c *Config) { c.Ring = long }, "ring", "more than 51"},
		{"empty identity", func(c *Config) { c.Identity = "" }, "identity", "must not be empty"},
		{"identity not a label value", func(c *Config) { c.Identity = "a/b" }, "identity", "valid label value"},
		{"identity not in a Lease name", func(c *Config) { c.Identity = "Host_1" }, "identity", "Lease name"},
		{"lease shorter than renew", func(c *Config) { c.LeaseDuration = time.Second }, "leaseDuration", "greater than renewDeadline"},
		{"renew too short", func(c *Config) { c.RenewDeadline = 300 * time.Millisecond }, "renewDeadline", "JitterFactor"},
		{"bad namespace", func(c *Config) { c.Namespace = "Kube_System" }, "namespace", "DNS-1123"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			tc.edit(&c)
			err := c.Validate()
			require.ErrorIs(t, err, ErrInvalidConfig)
			var ce *ConfigError
			require.True(t, errors.As(err, &ce))
			found := false
			for _, e := range flatten(err) {
				if errors.As(e, &ce) && ce.Field == tc.field {
					found = true
					assert.Contains(t, ce.Error(), tc.says)
				}
			}
			assert.True(t, found, "no error on field %s in %v", tc.field, err)
		})
	}
}

func TestNamesOfARing(t *testing.T) {
	assert.Equal(t, "shard.ctrlkit.dev/web", Label("web"))
	assert.Equal(t, "drain.shard.ctrlkit.dev/web", DrainLabel("web"))
	assert.Equal(t, "shard.ctrlkit.dev/web-children-rv", barrierAnnotation("web"))
	assert.Equal(t, "shard.ctrlkit.dev/web=a", Selector("web", "a"))
	assert.Equal(t, "web.a.b", memberLeaseName("web", "a.b"))
	id, ok := identityOf("web", "web.a.b")
	assert.True(t, ok)
	assert.Equal(t, "a.b", id)
	_, ok = identityOf("web", "web-sharder")
	assert.False(t, ok, "the sharder's Lease is no member's")
}

// The ring's client has the ring's budget, not the controllers' rest config's, which is left
// as it was.
func TestNewRingClient(t *testing.T) {
	restCfg := &rest.Config{Host: "https://127.0.0.1:1", QPS: 20, Burst: 30}
	meta, err := NewRingClient(restCfg, Config{Ring: "web", Identity: "a", WriteQPS: 400})
	require.NoError(t, err)
	assert.NotNil(t, meta)
	assert.Equal(t, float32(20), restCfg.QPS, "the caller's config is not changed")
	_, err = NewRingClient(restCfg, Config{Ring: "web", Identity: "a", WriteQPS: -5})
	assert.ErrorIs(t, err, ErrInvalidConfig)
	_, err = NewRingClient(nil, Config{Ring: "web", Identity: "a"})
	assert.ErrorIs(t, err, ErrInvalidConfig)
	d := Config{}.WithDefaults()
	assert.Equal(t, float32(defaultWriteQPS), d.WriteQPS)
	assert.Equal(t, defaultWriteBurst, d.WriteBurst)

	// The Lease client has the same budget, its own token bucket.
	leases, err := NewLeaseClient(restCfg, Config{Ring: "web", Identity: "a", WriteQPS: 400})
	require.NoError(t, err)
	limiter := leases.CoordinationV1().RESTClient().GetRateLimiter()
	require.NotNil(t, limiter)
	assert.InDelta(t, 400, limiter.QPS(), 0.01)
	_, err = NewLeaseClient(nil, Config{Ring: "web", Identity: "a"})
	assert.ErrorIs(t, err, ErrInvalidConfig)
}

func TestConfigModeAndHashField(t *testing.T) {
	base := Config{Ring: "r", Identity: "m-0"}
	d := base.WithDefaults()
	assert.Equal(t, ModeLabels, d.Mode)
	assert.Equal(t, HashUID, d.HashField)
	bad := base
	bad.Mode, bad.HashField = "slots", "object.metadata.name"
	err := bad.WithDefaults().Validate()
	var fields []string
	for _, e := range flatten(err) {
		var ce *ConfigError
		require.ErrorAs(t, e, &ce)
		fields = append(fields, ce.Field)
	}
	assert.ElementsMatch(t, []string{"mode", "hashField"}, fields)
	assert.ErrorContains(t, err, `mode "slots"`)
	ok := base
	ok.Mode, ok.HashField = ModeServer, HashNamespace
	assert.NoError(t, ok.WithDefaults().Validate())
}
