package fleetpolicy_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ctrlkit/ctrlkit/examples/fleet-policy/fleetpolicy"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/multicluster"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// kubeconfigOf writes cfg (a bearer token and a CA, as testkit's servers
// use) as a kubeconfig, the way a fleet manager stores one in a Secret.
func kubeconfigOf(t *testing.T, cfg *rest.Config) []byte {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData, TLSServerName: cfg.ServerName}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	b, err := clientcmd.Write(*kc)
	require.NoError(t, err)
	return b
}

// The fleet journey on three kube-apiservers: the hub (which is also a
// member) holds the source and the kubeconfig Secrets; "one" is reached
// through a proxy whose outage the test controls; "two" is disengaged by
// deleting its Secret. The process stays ready throughout, names the
// unreachable cluster on /readyz?verbose, and repairs drift made during the
// outage once the cluster answers again, without a restart.
func TestFleetPolicyOnThreeAPIServers(t *testing.T) {
	hub := testkit.SharedAPIServer(t)
	one := testkit.NewAPIServer(t)
	two := testkit.NewAPIServer(t)
	outage := testkit.NewOutage(t, one.Config())
	ctx := hub.Context()
	ns := hub.Namespace()

	_, err := hub.Client().CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fleetpolicy.DefaultName},
		Data: map[string]string{"policy": "deny-all"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	members := map[string]*rest.Config{"hub": hub.Config(), "one": outage.Config(), "two": two.Config()}
	for name, cfg := range members {
		_, err := hub.Client().CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"fleet.ctrlkit.dev/member": "true"}},
			Data:       map[string][]byte{multicluster.DefaultSecretKey: kubeconfigOf(t, cfg)}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	// A labelled Namespace in each cluster (on the shared hub, one of this test's own).
	target := map[string]string{"hub": ns + "-team", "one": "team", "two": "team"}
	envs := map[string]*testkit.Env{"hub": hub, "one": one, "two": two}
	for name, env := range envs {
		_, err := env.Client().CoreV1().Namespaces().Create(ctx, namespace(target[name], "true"), metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = env.Client().CoreV1().Namespaces().Delete(context.Background(), target[name], metav1.DeleteOptions{})
		})
	}

	mgr, err := manager.New(manager.Options{Config: hub.Config(), HealthProbeAddr: "127.0.0.1:0"})
	require.NoError(t, err)
	fleet, err := multicluster.New(multicluster.Options{
		Provider:      &multicluster.Secrets{Client: hub.Client(), Namespace: ns, LabelSelector: "fleet.ctrlkit.dev/member=true"},
		ProbeInterval: 250 * time.Millisecond,
	})
	require.NoError(t, err)
	c, err := fleetpolicy.New(mgr.Factory(), fleet, fleetpolicy.Options{SourceNamespace: ns})
	require.NoError(t, err)
	require.NoError(t, mgr.Add(fleet))
	require.NoError(t, mgr.Add(c))
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { assert.NoError(t, mgr.Start(runCtx)) })
	defer wg.Wait()
	defer cancel()

	for name, env := range envs {
		require.Eventually(t, baseline(env.Client(), target[name], "deny-all"), wait, 20*time.Millisecond, name)
	}
	readyz := func() (int, string) {
		resp, err := http.Get("http://" + mgr.HealthProbeAddr() + "/readyz?verbose")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	require.Eventually(t, func() bool { code, body := readyz(); return code == http.StatusOK && !strings.Contains(body, "but:") }, wait, 20*time.Millisecond)

	// "one" goes dark: the others carry on, the process stays ready and
	// names it.
	outage.Cut()
	require.Eventually(t, func() bool {
		code, body := readyz()
		return code == http.StatusOK && strings.Contains(body, "cluster one: unreachable")
	}, wait, 20*time.Millisecond)
	// Drift behind the outage's back, and a change the others must get.
	require.NoError(t, one.Client().CoreV1().ConfigMaps(target["one"]).Delete(ctx, fleetpolicy.DefaultName, metav1.DeleteOptions{}))
	src, err := hub.Client().CoreV1().ConfigMaps(ns).Get(ctx, fleetpolicy.DefaultName, metav1.GetOptions{})
	require.NoError(t, err)
	src.Data["policy"] = "allow-dns"
	_, err = hub.Client().CoreV1().ConfigMaps(ns).Update(ctx, src, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, baseline(hub.Client(), target["hub"], "allow-dns"), wait, 20*time.Millisecond)
	require.Eventually(t, baseline(two.Client(), target["two"], "allow-dns"), wait, 20*time.Millisecond)

	// Back: repaired without a restart.
	outage.Restore()
	restored := time.Now()
	require.Eventually(t, baseline(one.Client(), target["one"], "allow-dns"), wait, 20*time.Millisecond)
	t.Logf("cluster one repaired %v after its outage ended", time.Since(restored).Round(time.Millisecond))
	require.Eventually(t, func() bool { _, body := readyz(); return !strings.Contains(body, "cluster one") }, wait, 20*time.Millisecond)

	// The connections to "one" die (a load balancer forgot them): the probe
	// gets no answer, the dead connections are closed, the watches resume
	// on new ones.
	outage.Drop()
	require.NoError(t, one.Client().CoreV1().ConfigMaps(target["one"]).Delete(ctx, fleetpolicy.DefaultName, metav1.DeleteOptions{}))
	dropped := time.Now()
	require.Eventually(t, baseline(one.Client(), target["one"], "allow-dns"), wait, 20*time.Millisecond)
	t.Logf("cluster one repaired %v after its connections died", time.Since(dropped).Round(time.Millisecond))

	// "one" is killed and started again.
	require.NoError(t, one.RestartAPIServer())
	require.NoError(t, one.Client().CoreV1().ConfigMaps(target["one"]).Delete(ctx, fleetpolicy.DefaultName, metav1.DeleteOptions{}))
	restarted := time.Now()
	require.Eventually(t, baseline(one.Client(), target["one"], "allow-dns"), wait, 20*time.Millisecond)
	t.Logf("cluster one repaired %v after its API server restarted", time.Since(restarted).Round(time.Millisecond))
	code, _ := readyz()
	assert.Equal(t, http.StatusOK, code)

	// "two" leaves the fleet: its Secret is deleted; it is not touched any more.
	require.NoError(t, hub.Client().CoreV1().Secrets(ns).Delete(ctx, "two", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { _, err := fleet.Get("two"); return err != nil }, wait, 20*time.Millisecond)
	_, err = two.Client().CoreV1().Namespaces().Create(ctx, namespace("late", "true"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = hub.Client().CoreV1().Namespaces().Create(ctx, namespace(ns+"-late", "true"), metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = hub.Client().CoreV1().Namespaces().Delete(context.Background(), ns+"-late", metav1.DeleteOptions{})
	})
	require.Eventually(t, baseline(hub.Client(), ns+"-late", "allow-dns"), wait, 20*time.Millisecond)
	require.Eventually(t, func() bool { return c.Stats().Idle() && c.Stats().Idle() }, wait, 20*time.Millisecond)
	assert.Condition(t, baseline(two.Client(), "late", ""), "a disengaged cluster is left alone")
	assert.Equal(t, []string{"hub", "one"}, fleet.Clusters())
}
