package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// What an operator sees of the binary's cache memory, run against kube-apiserver: the
// ctrlkit_informer_* series on /metrics and the page at /debug/informers, both following the
// objects the controller caches.
func TestAPIServerCacheMemoryMetricsAndPage(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ns := env.Namespace()
	out := runBinary(t, env, "rs-mem-"+ns)

	_, err := env.Client().AppsV1().ReplicaSets(ns).Create(env.Context(), replicaSet(ns, "mem", "", 4), metav1.CreateOptions{})
	require.NoError(t, err)

	fetch := func(path string) (string, error) {
		m := servingMetrics.FindStringSubmatch(out.String())
		if m == nil {
			return "", fmt.Errorf("the metrics address is not logged yet")
		}
		resp, err := http.Get("http://" + m[1] + path)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return "", err
		}
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
		}
		return string(body), nil
	}
	series := func(body, name, resource string) (float64, bool) {
		re := regexp.MustCompile(`(?m)^` + name + `\{resource="` + regexp.QuoteMeta(resource) + `",scope="[^"]*"\} (\S+)$`)
		m := re.FindStringSubmatch(body)
		if m == nil {
			return 0, false
		}
		v, err := strconv.ParseFloat(m[1], 64)
		return v, err == nil
	}

	// The Pods the controller created are in its cache, and in the series.
	var metrics, why string
	err = wait.PollUntilContextTimeout(env.Context(), 50*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		if metrics, err = fetch("/metrics"); err != nil {
			why = err.Error()
			return false, nil
		}
		pods, ok := series(metrics, "ctrlkit_informer_objects", "pods")
		why = fmt.Sprintf("pods series %v (present %v)", pods, ok)
		return ok && pods >= 4, nil
	})
	require.NoError(t, err, "%s\n%s", why, out.String())
	for _, name := range []string{"ctrlkit_informer_bytes", "ctrlkit_informer_dedup_ratio"} {
		for _, resource := range []string{"pods", "replicasets.apps"} {
			v, ok := series(metrics, name, resource)
			assert.True(t, ok && v > 0, "%s{resource=%q} = %v (present %v)", name, resource, v, ok)
		}
	}
	assert.Regexp(t, `(?m)^ctrlkit_informer_sharing_table_bytes \d`, metrics)

	// The page lists the informers by bytes with the test's namespace among the Pods' top ones.
	page, err := fetch(manager.DebugInformersPath)
	require.NoError(t, err)
	assert.Contains(t, page, "RESOURCE")
	assert.Regexp(t, `(?m)^pods\s`, page)
	assert.Contains(t, page, "Top namespaces of pods")
	assert.Contains(t, page, ns)

	raw, err := fetch(manager.DebugInformersPath + "?format=json")
	require.NoError(t, err)
	var doc struct{ Memory informer.CacheMemory }
	require.NoError(t, json.Unmarshal([]byte(raw), &doc))
	var found bool
	for _, inf := range doc.Memory.Informers {
		if inf.Resource == "pods" {
			found = true
			assert.GreaterOrEqual(t, inf.Objects, 4)
			assert.Greater(t, inf.Bytes, int64(4*1000), "a few kB per Pod at least")
		}
	}
	assert.True(t, found, "pods in %s", raw)
}

// A memory budget an operator sees through readiness, on kube-apiserver: the binary run with
// --cache-memory-budget and the fail-readiness policy is ready while its caches are within the
// budget, answers /readyz with 503 naming the check informer-memory once a ReplicaSet's Pods
// grow them past it (kubectl would show the Pod not ready, and a rollout would stop), and is
// ready again once they are gone.
func TestAPIServerCacheMemoryBudgetFailsReadiness(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ns := env.Namespace()
	// The budget charges the caches, not the sharing table's fixed 128 KiB filter: the first
	// ReplicaSet takes a few KiB; 40 Pods add about 1.5 KiB each.
	out := runBinary(t, env, "rs-budget-"+ns, "--cache-memory-budget=32Ki", "--cache-memory-budget-policy=fail-readiness")

	readyz := func() (int, string, error) {
		m := servingHealth.FindStringSubmatch(out.String())
		if m == nil {
			return 0, "", fmt.Errorf("the health address is not logged yet")
		}
		resp, err := http.Get("http://" + m[1] + "/readyz")
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	await := func(what string, ok func(code int, body string) bool) {
		t.Helper()
		var code int
		var body string
		err := wait.PollUntilContextTimeout(env.Context(), 50*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
			c, b, err := readyz()
			if err != nil {
				return false, nil
			}
			code, body = c, b
			return ok(c, b), nil
		})
		require.NoError(t, err, "%s: last /readyz %d %s\n%s", what, code, body, out.String())
	}
	scale := func(n int32) {
		t.Helper()
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			rs, err := env.Client().AppsV1().ReplicaSets(ns).Get(env.Context(), "budget", metav1.GetOptions{})
			if err != nil {
				return err
			}
			rs.Spec.Replicas = &n
			_, err = env.Client().AppsV1().ReplicaSets(ns).Update(env.Context(), rs, metav1.UpdateOptions{})
			return err
		}))
	}

	_, err := env.Client().AppsV1().ReplicaSets(ns).Create(env.Context(), replicaSet(ns, "budget", "", 0), metav1.CreateOptions{})
	require.NoError(t, err)
	await("ready within the budget", func(code int, _ string) bool { return code == http.StatusOK })

	scale(40)
	await("not ready over the budget", func(code int, body string) bool {
		return code == http.StatusServiceUnavailable && strings.Contains(body, "informer-memory") &&
			strings.Contains(body, "over their memory budget of 32.0 KiB")
	})
	// The periodic check (every 10 s) logs the crossing, naming the largest informers.
	require.NoError(t, wait.PollUntilContextTimeout(env.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return strings.Contains(out.String(), `"Warning: informer caches over their memory budget"`), nil
	}), "the crossing is logged:\n%s", out.String())

	scale(0)
	await("ready again once the Pods are gone", func(code int, _ string) bool { return code == http.StatusOK })
}

// runBinary runs the example binary in the test's process against env, leading through the
// Lease lease in env's namespace, serving plain-HTTP metrics and probes on loopback, with extra
// flags; it returns its log. At the test's end its context ends and it must exit 0.
func runBinary(t *testing.T, env *testkit.Env, lease string, extra ...string) *rbactest.LogBuffer {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, demo.WriteKubeconfig(path, env.Config()))
	ctx, cancel := context.WithCancel(env.Context())
	out := &rbactest.LogBuffer{}
	done := make(chan int, 1)
	args := append([]string{"--kubeconfig=" + path, "--metrics-addr=127.0.0.1:0", "--metrics-secure=false",
		"--health-addr=127.0.0.1:0", "--leader-elect-resource-namespace=" + env.Namespace(), "--leader-elect-resource-name=" + lease}, extra...)
	go func() { done <- run(ctx, args, out) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			assert.Equal(t, 0, code, out.String())
		case <-time.After(time.Minute):
			t.Error("run did not return after its context ended")
		}
	})
	return out
}
