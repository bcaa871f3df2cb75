package demo_test

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/certwatcher"
	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// program is a binary with no controller whose demo waits for a seeded ConfigMap.
func program(demoRan *bool) demo.Program {
	return demo.Program{
		Name: "tiny",
		Cluster: func() (fakecluster.Options, error) {
			return fakecluster.Options{Objects: []runtime.Object{
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "seed"}},
			}}, nil
		},
		Setup: func(context.Context, *demo.Env) error { return nil },
		Demo: func(ctx context.Context, env *demo.Env) error {
			*demoRan = true
			return env.Step(ctx, "the seed is there", func(ctx context.Context) (bool, error) {
				_, err := env.Client.CoreV1().ConfigMaps("default").Get(ctx, "seed", metav1.GetOptions{})
				return err == nil, err
			})
		},
	}
}

func TestRunConverges(t *testing.T) {
	t.Setenv(demo.EnvKubeconfig, "")
	var out bytes.Buffer
	var ran bool
	require.Equal(t, demo.ExitOK, demo.Run(context.Background(), program(&ran), []string{"--leader-elect=false"}, &out), out.String())
	assert.True(t, ran)
	assert.Contains(t, out.String(), `"Converged: the seed is there"`)
}

// Bad flags exit 2 before anything starts, with a message naming the flag.
func TestRunRejectsBadFlagsBeforeStarting(t *testing.T) {
	t.Setenv(demo.EnvKubeconfig, "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--metrics-addr=notanaddr"}, `tiny: --metrics-addr "notanaddr": address notanaddr: missing port in address`},
		{[]string{"--health-addr=127.0.0.1:http"}, `tiny: --health-addr "127.0.0.1:http": port "http" is not a number`},
		{[]string{"--health-addr=127.0.0.1:70000"}, `port "70000" is not a number from 0 to 65535`},
		{[]string{"--kube-api-qps=NaN"}, "--kube-api-qps NaN: want a finite number"},
		{[]string{"--kube-api-qps=-1"}, "--kube-api-qps -1: want a finite number"},
		{[]string{"--kube-api-burst=0"}, "--kube-api-burst 0: want at least 1 with --kube-api-qps 20"},
		{[]string{"--workers=0"}, "--workers must be at least 1"},
		{[]string{"--timeout=0s"}, "--timeout must be positive"},
		{[]string{"extra"}, `unexpected arguments ["extra"]`},
		{[]string{"--leader-elect-lease-duration=0s"}, "--leader-elect-lease-duration: invalid leader election config"},
	} {
		var out bytes.Buffer
		var ran bool
		assert.Equal(t, demo.ExitBadArgs, demo.Run(context.Background(), program(&ran), tc.args, &out), "%v", tc.args)
		assert.Contains(t, out.String(), tc.want, "%v", tc.args)
		assert.False(t, ran, "%v: the demo ran", tc.args)
		assert.NotContains(t, out.String(), "Running the demo", "%v: something started", tc.args)
	}
}

// A Manager that cannot serve fails the run (exit 1) with its own error, not the demo's
// "context canceled" that its failure caused.
func TestRunReportsTheManagersFailureNotTheDemos(t *testing.T) {
	t.Setenv(demo.EnvKubeconfig, "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	p := program(new(bool))
	p.Demo = func(ctx context.Context, _ *demo.Env) error {
		<-ctx.Done() // waits for the Manager's failure to end it
		return ctx.Err()
	}
	var out bytes.Buffer
	assert.Equal(t, demo.ExitFailed, demo.Run(context.Background(), p, []string{"--health-addr=" + ln.Addr().String()}, &out))
	assert.Contains(t, out.String(), ln.Addr().String())
	assert.NotContains(t, out.String(), "context canceled")
	assert.Equal(t, 1, strings.Count(out.String(), `"Exiting"`))
}

// --metrics-secure is on against a cluster and off on the in-memory one (which cannot review
// tokens); the flags that go with it are checked before anything starts.
func TestParseMetricsServingFlags(t *testing.T) {
	t.Setenv(demo.EnvKubeconfig, "")
	p := program(new(bool))
	parse := func(args ...string) (*demo.Settings, error) {
		return demo.Parse(p, args, &bytes.Buffer{})
	}
	s, err := parse()
	require.NoError(t, err)
	assert.False(t, s.MetricsSecure, "in memory: plain HTTP")
	s, err = parse("--kubeconfig=/nonexistent/kubeconfig", "--profiling")
	require.NoError(t, err)
	assert.True(t, s.MetricsSecure, "secure by default against a cluster")
	assert.True(t, s.Profiling)
	assert.Empty(t, s.MetricsCertDir, "self-signed")

	dir := t.TempDir()
	b, err := certwatcher.SelfSigned(certwatcher.SelfSignedOptions{})
	require.NoError(t, err)
	require.NoError(t, b.WriteFiles(dir))
	s, err = parse("--kubeconfig=/nonexistent/kubeconfig", "--metrics-cert-dir="+dir)
	require.NoError(t, err)
	assert.Equal(t, dir, s.MetricsCertDir)

	for want, args := range map[string][]string{
		"--metrics-secure needs a cluster (--kubeconfig)":         {"--metrics-secure"},
		`--metrics-cert-dir "` + dir + `" needs --metrics-secure`: {"--kubeconfig=/k", "--metrics-secure=false", "--metrics-cert-dir=" + dir},
		"no such file or directory":                               {"--kubeconfig=/k", "--metrics-cert-dir=" + t.TempDir()},
		`--metrics-addr and --health-addr are both ":9000"`:       {"--kubeconfig=/k", "--metrics-addr=:9000", "--health-addr=:9000"},
	} {
		_, err := parse(args...)
		assert.ErrorContains(t, err, want, "%v", args)
	}
	var out bytes.Buffer
	assert.Equal(t, demo.ExitBadArgs, demo.Run(context.Background(), p, []string{"--metrics-secure"}, &out))
	assert.Contains(t, out.String(), "tiny: --metrics-secure needs a cluster")
}

// A program that can run sharded: --sharded names its ring, the ring's flags are checked
// before anything starts (each error naming its flag), a sharded binary needs a cluster, and
// its replicas do not elect a leader unless --leader-elect says so.
func TestParseShardingFlags(t *testing.T) {
	t.Setenv(demo.EnvKubeconfig, "")
	p := program(new(bool))
	parse := func(args ...string) (*demo.Settings, error) {
		return demo.Parse(p, args, &bytes.Buffer{})
	}
	_, err := parse("--kubeconfig=/k", "--sharded")
	assert.ErrorContains(t, err, "unknown flag: --sharded", "only programs with Sharding have the flags")

	p.Sharding = &demo.Sharding{Ring: "things", Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}}
	s, err := parse("--kubeconfig=/k")
	require.NoError(t, err)
	assert.False(t, s.Shard.Sharded())
	assert.True(t, s.LeaderElection.Enabled)

	s, err = parse("--kubeconfig=/k", "--sharded", "--shard-identity=replica-1")
	require.NoError(t, err)
	assert.Equal(t, "things", s.Shard.Ring)
	assert.Equal(t, "replica-1", s.Shard.Identity)
	assert.Empty(t, s.Shard.Namespace, "the Pod's namespace, else ctrlkit-system, as the Lease's: WithDefaults decides")
	assert.False(t, s.LeaderElection.Enabled, "members share the work: no election")

	s, err = parse("--kubeconfig=/k", "--sharded", "--shard-ring=other", "--shard-identity=replica-1", "--leader-elect")
	require.NoError(t, err)
	assert.Equal(t, "other", s.Shard.Ring, "an explicit --shard-ring wins")
	assert.True(t, s.LeaderElection.Enabled, "an explicit --leader-elect is kept")

	for want, args := range map[string][]string{
		"--sharded (--shard-ring) needs a cluster (--kubeconfig)": {"--sharded"},
		"--sharded with an empty --shard-ring":                    {"--kubeconfig=/k", "--sharded", "--shard-ring="},
		"--shard-identity: invalid sharding config":               {"--kubeconfig=/k", "--sharded", "--shard-identity=Replica_1"},
		"--shard-lease-duration: invalid sharding config":         {"--kubeconfig=/k", "--shard-ring=things", "--shard-identity=r", "--shard-lease-duration=1s"},
	} {
		_, err := parse(args...)
		assert.ErrorContains(t, err, want, "%v", args)
	}
}
