package testkit_test

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// TestAPIServerLifecycle runs one dedicated server through everything a test does with it —
// typed and dynamic round trips, an informer across a kube-apiserver restart — and then checks
// that its teardown left no process and no bound port behind.
func TestAPIServerLifecycle(t *testing.T) {
	var (
		pids  []int
		host  string
		inner *testing.T
	)
	t.Run("server", func(t *testing.T) {
		inner = t
		begin := time.Now()
		env := testkit.NewAPIServer(t)
		t.Logf("NewAPIServer took %v", time.Since(begin))
		pids = testkit.PIDs(env)
		require.Len(t, pids, 2, "etcd and kube-apiserver")
		require.NotNil(t, env.Config())
		host = env.Config().Host
		ns := env.Namespace()
		require.NotEmpty(t, ns)

		t.Run("pod round trip", func(t *testing.T) {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
			}
			created, err := env.Client().CoreV1().Pods(ns).Create(env.Context(), pod, metav1.CreateOptions{})
			require.NoError(t, err, "ServiceAccount admission is off, so no default ServiceAccount is needed")
			require.NotEmpty(t, created.UID)
			require.NotEmpty(t, created.ResourceVersion)
			// Defaulting ran: the real API server, not a fake, stored it.
			require.Equal(t, corev1.RestartPolicyAlways, created.Spec.RestartPolicy)

			got, err := env.Client().CoreV1().Pods(ns).Get(env.Context(), "web", metav1.GetOptions{})
			require.NoError(t, err)
			require.Equal(t, created.UID, got.UID)
			require.Equal(t, "registry.k8s.io/pause:3.10", got.Spec.Containers[0].Image)

			u, err := env.Dynamic().Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).
				Namespace(ns).Get(env.Context(), "web", metav1.GetOptions{})
			require.NoError(t, err)
			require.Equal(t, string(created.UID), string(u.GetUID()))
		})

		t.Run("informer survives a kube-apiserver restart", func(t *testing.T) {
			testInformerAcrossRestart(t, env)
		})

		t.Run("fences across a kube-apiserver restart", func(t *testing.T) {
			testFencesAcrossRestart(t, env)
		})
	})
	if inner.Skipped() {
		t.Skip("the server was not available")
	}
	require.Len(t, pids, 2)
	for _, pid := range pids {
		err := syscall.Kill(pid, 0)
		require.ErrorIs(t, err, syscall.ESRCH, "process %d outlived the test", pid)
	}
	u, err := url.Parse(host)
	require.NoError(t, err)
	l, err := net.Listen("tcp", u.Host)
	require.NoError(t, err, "the API server's port is free again")
	require.NoError(t, l.Close())
}

func testInformerAcrossRestart(t *testing.T, env *testkit.Env) {
	ns := env.Namespace()
	cms, err := informer.For[*corev1.ConfigMap](env.Factory())
	require.NoError(t, err)
	require.NoError(t, env.SyncContext(env.Context(), time.Minute))

	create := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			cm := &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Namespace: ns, Labels: map[string]string{"set": "restart"}},
				Data:       map[string]string{"i": fmt.Sprint(i)},
			}
			_, err := env.Client().CoreV1().ConfigMaps(ns).Create(env.Context(), cm, metav1.CreateOptions{})
			require.NoError(t, err)
		}
	}
	seen := func(n int) func() bool {
		return func() bool {
			got, err := cms.Lister().Namespace(ns).List(labels.SelectorFromSet(labels.Set{"set": "restart"}))
			return err == nil && len(got) == n
		}
	}

	// A controller runs across the restart too: it labels every ConfigMap it sees.
	c, err := labelSeen(env)
	require.NoError(t, err)
	stop := env.RunController(env.Context(), c)
	defer func() { require.NoError(t, stop()) }()

	create(0, 5)
	require.Eventually(t, seen(5), 30*time.Second, 20*time.Millisecond)
	require.NoError(t, env.QuietContext(env.Context(), time.Minute, testkit.DefaultQuietPeriod))

	require.NoError(t, env.RestartAPIServer())
	// Written after the restart, while the informer's watch is broken or being re-established:
	// it must re-watch (or re-list) and catch up, and the controller must reconcile them all.
	create(5, 10)
	require.Eventually(t, seen(10), 60*time.Second, 20*time.Millisecond)
	for i := range 10 {
		cm, err := cms.Lister().Get(ns, fmt.Sprintf("cm-%d", i))
		require.NoError(t, err)
		require.Equal(t, fmt.Sprint(i), cm.Data["i"])
	}
	require.NoError(t, env.QuietContext(env.Context(), time.Minute, testkit.DefaultQuietPeriod))
	list, err := env.Client().CoreV1().ConfigMaps(ns).List(env.Context(), metav1.ListOptions{LabelSelector: "set=restart"})
	require.NoError(t, err)
	require.Len(t, list.Items, 10)
	for _, cm := range list.Items {
		assert.Equal(t, "true", cm.Labels["seen"], "%s reconciled after the restart", cm.Name)
	}
}

func TestSharedAPIServerGivesEachTestItsOwnNamespace(t *testing.T) {
	var hosts, namespaces []string
	for i := range 2 {
		t.Run(fmt.Sprint("test", i), func(t *testing.T) {
			env := testkit.SharedAPIServer(t)
			hosts = append(hosts, env.Config().Host)
			namespaces = append(namespaces, env.Namespace())
			_, err := env.Client().CoreV1().ConfigMaps(env.Namespace()).Create(env.Context(),
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}, metav1.CreateOptions{})
			require.NoError(t, err)
			list, err := env.Client().CoreV1().ConfigMaps(env.Namespace()).List(env.Context(), metav1.ListOptions{})
			require.NoError(t, err)
			var mine int
			for _, cm := range list.Items {
				if cm.Name == "mine" {
					mine++
				}
			}
			require.Equal(t, 1, mine, "the other test's ConfigMap is in its own namespace")
		})
	}
	if t.Skipped() || len(hosts) < 2 {
		return
	}
	require.Equal(t, hosts[0], hosts[1], "one server for the test binary")
	require.NotEqual(t, namespaces[0], namespaces[1])
}

// Fake-only controls (FailWrites, Delay, Actions) are methods of FakeEnv, so calling them on an
// API server Env does not compile; the one server-only control that Env has reports misuse.
func TestRestartAPIServerRefusesAFake(t *testing.T) {
	assert.ErrorContains(t, testkit.NewFake(t).RestartAPIServer(), "needs an API server Env")
}

func TestMissingBinariesSkipOrFail(t *testing.T) {
	if testing.Short() {
		t.Skip("in -short mode NewAPIServer skips before it looks for binaries")
	}
	empty := t.TempDir()
	t.Setenv("CTRLKIT_KUBE_DIR", empty)
	t.Setenv("CTRLKIT_KUBE_APISERVER", "")
	t.Setenv("CTRLKIT_ETCD", "")

	t.Setenv("CTRLKIT_REQUIRE_APISERVER", "")
	var inner *testing.T
	t.Run("skips", func(t *testing.T) {
		inner = t
		testkit.NewAPIServer(t)
		t.Error("NewAPIServer returned without binaries")
	})
	require.True(t, inner.Skipped())

	t.Setenv("CTRLKIT_REQUIRE_APISERVER", "1")
	msg := fatalOf(t, func(tb testing.TB) { testkit.NewAPIServer(tb) })
	require.Contains(t, msg, "make kube")
	require.Contains(t, msg, filepath.Join(empty, "kube-apiserver"))
	require.Contains(t, msg, "CTRLKIT_REQUIRE_APISERVER=1")
}

func TestRunControllerAgainstTheAPIServer(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ns := env.Namespace()
	for i := range 5 {
		_, err := env.Client().CoreV1().ConfigMaps(ns).Create(env.Context(),
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("cm-", i)}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	c, err := labelSeen(env)
	require.NoError(t, err)
	env.RunController(env.Context(), c)
	env.WaitForQuiet(time.Minute)

	list, err := env.Client().CoreV1().ConfigMaps(ns).List(env.Context(), metav1.ListOptions{LabelSelector: "seen=true"})
	require.NoError(t, err)
	require.Len(t, list.Items, 5, "the real server accepted every update")
}
