package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/internal/clientgometrics"
)

// sample returns the value of the series name{labels} in g: a counter's or
// gauge's value, a histogram's sample count. found is false without it.
func sample(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) (value float64, found bool) {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; !ok || v != l.GetValue() {
					continue metrics
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			default:
				t.Fatalf("%s: unexpected type %v", name, mf.GetType())
			}
		}
	}
	return 0, false
}

// A Manager's registry carries client-go's own REST client series: each
// request by code, method and host, its latency and its wait in the client's
// rate limiter, by verb and host.
func TestManagerExportsRESTClientMetrics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/api/v1/namespaces/ns/configmaps/a" {
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(apierrors.NewNotFound(corev1.Resource("configmaps"), "b").Status())
			return
		}
		cm := configMap("ns", "a")
		cm.APIVersion, cm.Kind = "v1", "ConfigMap"
		_ = json.NewEncoder(w).Encode(cm)
	}))
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	host := u.Host // unique to this test: the process-wide counts start at 0
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	require.NoError(t, err)

	m, err := New(Options{Client: fake.NewClientset()})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = client.CoreV1().ConfigMaps("ns").Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	_, err = client.CoreV1().ConfigMaps("ns").Get(ctx, "b", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "%v", err)
	_, err = client.CoreV1().ConfigMaps("ns").Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)

	g := m.Gatherer()
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"rest_client_requests_total", map[string]string{"code": "200", "method": "GET", "host": host}, 2},
		{"rest_client_requests_total", map[string]string{"code": "404", "method": "GET", "host": host}, 1},
		{"rest_client_request_duration_seconds", map[string]string{"verb": "GET", "host": host}, 3},
		{"rest_client_rate_limiter_duration_seconds", map[string]string{"verb": "GET", "host": host}, 3},
	} {
		got, found := sample(t, g, tc.name, tc.labels)
		assert.True(t, found, "%s%v is not exported", tc.name, tc.labels)
		assert.Equal(t, tc.want, got, "%s%v", tc.name, tc.labels)
	}
	_, found := sample(t, g, "rest_client_requests_total", map[string]string{"code": "200", "method": "POST", "host": host})
	assert.False(t, found, "no POST was made")
}

var leaseSeq atomic.Int64

// leader_election_master_status{name} is 1 while the Manager leads and 0
// once it stopped.
func TestManagerExportsLeaderElectionStatus(t *testing.T) {
	le := fastElection("one")
	// The series is process-wide: a Lease name of its own per run (-count).
	le.Name = fmt.Sprintf("metrics-status-%d", leaseSeq.Add(1))
	m, err := New(Options{Client: fake.NewClientset(), LeaderElection: le})
	require.NoError(t, err)
	lease := map[string]string{"name": "kube-system/" + le.Name}
	_, found := sample(t, m.Gatherer(), "leader_election_master_status", lease)
	assert.False(t, found, "no series before the election ran")

	ctx, _ := testLogger(t)
	stop := startManager(t, ctx, m)
	require.Eventually(t, m.Elector().IsLeader, 10*time.Second, time.Millisecond)
	require.Eventually(t, func() bool {
		v, _ := sample(t, m.Gatherer(), "leader_election_master_status", lease)
		return v == 1
	}, 10*time.Second, time.Millisecond)
	require.NoError(t, stop())
	v, found := sample(t, m.Gatherer(), "leader_election_master_status", lease)
	assert.True(t, found)
	assert.Equal(t, 0.0, v, "not the leader once stopped")
}

// Importing manager takes none of client-go's metric hooks; New takes them.
// Checked in a process of its own, where nothing built a Manager (or a
// testkit Env) before.
func TestNewInstallsClientGoHooks(t *testing.T) {
	if os.Getenv(freshProcessEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestNewInstallsClientGoHooks$", "-test.count=1")
		cmd.Env = append(os.Environ(), freshProcessEnv+"=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "the test in a fresh process:\n%s", out)
		return
	}
	assert.False(t, clientgometrics.Hooked(), "client-go's hooks were taken before any Manager was built")
	_, err := New(Options{Client: fake.NewClientset()})
	require.NoError(t, err)
	assert.True(t, clientgometrics.Hooked(), "New took client-go's hooks")
}

// freshProcessEnv marks the process TestNewInstallsClientGoHooks starts.
const freshProcessEnv = "CTRLKIT_MANAGER_TEST_FRESH_PROCESS"
