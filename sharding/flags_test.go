package sharding_test

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/sharding"
)

func newFlagSet(cfg *sharding.Config) *pflag.FlagSet {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.AddFlags(fs)
	return fs
}

func TestAddFlagsDefaults(t *testing.T) {
	t.Setenv("POD_NAME", "Web-0")
	var cfg sharding.Config
	fs := newFlagSet(&cfg)
	for name, def := range map[string]string{
		"shard-ring":           "",
		"shard-namespace":      "", // the Pod's, else ctrlkit-system: WithDefaults decides
		"shard-identity":       "web-0",
		"shard-lease-duration": "15s",
		"shard-renew-deadline": "10s",
		"shard-retry-period":   "2s",
	} {
		f := fs.Lookup(name)
		require.NotNil(t, f, name)
		assert.Equal(t, def, f.DefValue, name)
		assert.NotEmpty(t, f.Usage, name)
	}
	require.NoError(t, fs.Parse(nil))
	assert.False(t, cfg.Sharded())
	assert.NoError(t, cfg.ValidateFlags(), "no ring: not sharded, nothing to check")

	preset := sharding.Config{Ring: "web", Identity: "given", LeaseDuration: time.Minute}
	fs = newFlagSet(&preset)
	assert.Equal(t, "web", fs.Lookup("shard-ring").DefValue, "the caller's Ring is the default")
	assert.Equal(t, "given", fs.Lookup("shard-identity").DefValue)
	assert.Equal(t, "1m0s", fs.Lookup("shard-lease-duration").DefValue)
}

func TestDefaultIdentity(t *testing.T) {
	t.Setenv("POD_NAME", "")
	host, err := os.Hostname()
	require.NoError(t, err)
	assert.Equal(t, strings.ToLower(host), sharding.DefaultIdentity(), "the host name without $POD_NAME")
	t.Setenv("POD_NAME", "Controller-7f9")
	assert.Equal(t, "controller-7f9", sharding.DefaultIdentity())
}

func TestAddFlagsParse(t *testing.T) {
	var cfg sharding.Config
	fs := newFlagSet(&cfg)
	require.NoError(t, fs.Parse([]string{
		"--shard-ring=replicasets",
		"--shard-namespace=ops",
		"--shard-identity=rs-1",
		"--shard-lease-duration=5s",
		"--shard-renew-deadline=3s",
		"--shard-retry-period=1s",
		"--shard-write-qps=400",
		"--shard-weight=2",
	}))
	assert.Equal(t, sharding.Config{Ring: "replicasets", Namespace: "ops", Identity: "rs-1", Weight: 2,
		LeaseDuration: 5 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: time.Second,
		WriteQPS: 400, WriteBurst: 500, Mode: sharding.ModeLabels, HashField: sharding.HashUID}, cfg)
	assert.True(t, cfg.Sharded())
	require.NoError(t, cfg.ValidateFlags())
}

func TestAddFlagsMalformed(t *testing.T) {
	for _, arg := range []string{
		"--shard-lease-duration=fifteen",
		"--shard-renew-deadline=10",
		"--shard-retry-period=2x",
	} {
		var cfg sharding.Config
		assert.Error(t, newFlagSet(&cfg).Parse([]string{arg}), arg)
	}
}

// Every broken rule names its flag; a typed zero duration is an error, not
// the default.
func TestValidateFlagsNamesTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		flag string
		want string
	}{
		{[]string{"--shard-ring=Web_Ring"}, "--shard-ring", "must be a DNS-1123 label"},
		{[]string{"--shard-ring=" + strings.Repeat("r", 52)}, "--shard-ring", "more than 51"},
		{[]string{"--shard-ring=web", "--shard-identity="}, "--shard-identity", "must not be empty"},
		{[]string{"--shard-ring=web", "--shard-identity=Web_0"}, "--shard-identity", "Lease name"},
		{[]string{"--shard-ring=web", "--shard-namespace=Ops"}, "--shard-namespace", "DNS-1123 label"},
		{[]string{"--shard-ring=web", "--shard-lease-duration=0s"}, "--shard-lease-duration", "greater than zero"},
		{[]string{"--shard-ring=web", "--shard-renew-deadline=20s"}, "--shard-lease-duration", "greater than renewDeadline"},
		{[]string{"--shard-ring=web", "--shard-retry-period=0s"}, "--shard-retry-period", "greater than zero"},
		{[]string{"--shard-ring=web", "--shard-retry-period=9s"}, "--shard-renew-deadline", "JitterFactor"},
		{[]string{"--shard-ring=web", "--shard-write-qps=0"}, "--shard-write-qps", "must be positive"},
		{[]string{"--shard-ring=web", "--shard-write-qps=-1"}, "--shard-write-qps", "must not be negative"},
		{[]string{"--shard-ring=web", "--shard-write-qps=NaN"}, "--shard-write-qps", "must be a finite number"},
		{[]string{"--shard-ring=web", "--shard-write-qps=+Inf"}, "--shard-write-qps", "must be a finite number"},
		{[]string{"--shard-ring=web", "--shard-write-burst=-1"}, "--shard-write-burst", "must not be negative"},
		{[]string{"--shard-ring=web", "--shard-write-burst=0"}, "--shard-write-burst", "must be positive"},
		{[]string{"--shard-ring=web", "--shard-weight=0"}, "--shard-weight", "between 1 and 100"},
		{[]string{"--shard-ring=web", "--shard-weight=101"}, "--shard-weight", "between 1 and 100"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cfg := sharding.Config{Identity: "web-0"}
			require.NoError(t, newFlagSet(&cfg).Parse(tc.args))
			err := cfg.ValidateFlags()
			require.Error(t, err)
			assert.ErrorIs(t, err, sharding.ErrInvalidConfig)
			var ce *sharding.ConfigError
			assert.True(t, errors.As(err, &ce))
			found := false
			for _, line := range strings.Split(err.Error(), "\n") {
				if strings.HasPrefix(line, tc.flag+": ") && strings.Contains(line, tc.want) {
					found = true
				}
			}
			assert.True(t, found, "%q names %s with %q", err, tc.flag, tc.want)
		})
	}
}
