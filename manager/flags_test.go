package manager_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/certwatcher"
	"github.com/ctrlkit/ctrlkit/manager"
)

func parseFlags(t *testing.T, f *manager.Flags, args ...string) error {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(discard{})
	f.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	return f.Validate()
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Every malformed value is an error naming its flag, before anything reaches a cluster.
func TestFlagsRejectMalformedValues(t *testing.T) {
	certDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(certDir, certwatcher.CertFileName), []byte("not a cert"), 0o600))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kube-api-qps=NaN"}, "--kube-api-qps NaN"},
		{[]string{"--kube-api-qps=+Inf"}, "--kube-api-qps +Inf"},
		{[]string{"--kube-api-qps=-Inf"}, "--kube-api-qps -Inf"},
		{[]string{"--kube-api-qps=-1"}, "--kube-api-qps -1"},
		{[]string{"--kube-api-qps=ten"}, `invalid argument "ten" for "--kube-api-qps"`},
		{[]string{"--kube-api-qps=5", "--kube-api-burst=0"}, "--kube-api-burst 0: want at least 1 with --kube-api-qps 5"},
		{[]string{"--kube-api-burst=-3"}, "--kube-api-burst -3"},
		{[]string{"--metrics-addr=8080"}, `--metrics-addr "8080"`},
		{[]string{"--health-addr=:99999"}, `--health-addr ":99999": port "99999" is not a number from 0 to 65535`},
		{[]string{"--metrics-cert-dir=" + certDir}, "needs --metrics-secure"},
		{[]string{"--metrics-secure", "--metrics-cert-dir=" + certDir}, "--metrics-cert-dir"},
		{[]string{"--metrics-secure", "--metrics-addr=:9000", "--health-addr=:9000"}, "--metrics-secure: --metrics-addr and --health-addr are both"},
		{[]string{"-v=-1"}, "-v -1"},
		{[]string{"--leader-elect-resource-namespace=Bad_NS"}, `--leader-elect-resource-namespace: invalid leader election config: namespace "Bad_NS"`},
		{[]string{"--leader-elect", "--leader-elect-renew-deadline=20s"}, "--leader-elect-lease-duration:"},
		{[]string{"--leader-elect=false", "--leader-elect-resource-namespace=Bad_NS"}, "--leader-elect-resource-namespace"},
		{[]string{"--leader-elect-resource-lock=configmaps"}, `"--leader-elect-resource-lock"`},
		{[]string{"--cache-memory-budget=lots"}, `--cache-memory-budget "lots"`},
		{[]string{"--cache-memory-budget-policy=panic"}, "--cache-memory-budget-policy"},
	} {
		var f manager.Flags
		f.LeaderElection.Name = "my-controller"
		err := parseFlags(t, &f, tc.args...)
		if assert.Error(t, err, "%v", tc.args) {
			assert.Contains(t, err.Error(), tc.want, "%v", tc.args)
		}
	}
}

// The zero Flags parse to a Manager without a client-side limit, serving on :8080 and :8081;
// an explicit --kube-api-qps is kept in the Config.
func TestFlagsOptions(t *testing.T) {
	kubeconfigFor(t, "https://cluster.example:6443")
	var f manager.Flags
	require.NoError(t, parseFlags(t, &f))
	opts, err := f.Options()
	require.NoError(t, err)
	assert.Equal(t, "https://cluster.example:6443", opts.Config.Host)
	assert.Negative(t, opts.Config.QPS, "no client-side limit")
	assert.Equal(t, ":8080", opts.MetricsAddr)
	assert.Equal(t, ":8081", opts.HealthProbeAddr)
	assert.False(t, opts.LeaderElection.Enabled)

	f = manager.Flags{}
	require.NoError(t, parseFlags(t, &f, "--kube-api-qps=20", "--kube-api-burst=30", "--leader-elect", "--leader-elect-resource-name=ctl"))
	opts, err = f.Options()
	require.NoError(t, err)
	assert.InDelta(t, 20, opts.Config.QPS, 0.001)
	assert.Equal(t, 30, opts.Config.Burst)
	assert.True(t, opts.LeaderElection.Enabled)
	assert.Equal(t, "ctl", opts.LeaderElection.Name)

	f = manager.Flags{}
	require.NoError(t, parseFlags(t, &f, "--kubeconfig="+filepath.Join(t.TempDir(), "missing")))
	_, err = f.Options()
	assert.ErrorContains(t, err, "--kubeconfig")
}
