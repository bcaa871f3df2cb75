package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/internal/kubelet"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/sharding"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// envRunMain makes the test binary run the example's main instead of the tests (TestMain).
const envRunMain = "CTRLKIT_REPLICASET_RUN_MAIN"

// Short ring timings, so a dead member's ReplicaSets move within seconds; they pass the Lease
// rules: 4s > 3s > 1.2×500ms, and the stored 4s exceeds RenewDeadline+RetryPeriod.
const (
	shardLeaseDuration = 4 * time.Second
	shardRenewDeadline = 3 * time.Second
	shardRetryPeriod   = 500 * time.Millisecond
	// shardSlack is what a takeover may add to LeaseDuration+RetryPeriod on a loaded machine:
	// relabelling the dead member's ReplicaSets and Pods, the new member's watch and sync, a
	// Pod made ready.
	shardSlack = 30 * time.Second
)

// Three replicas of the binary, each a process of its own with --sharded and the shipped
// rbac.yaml and sharding.yaml as its only rights, against a real API server: every ReplicaSet
// converges; each replica holds its member Lease and answers /readyz; the ReplicaSets (and
// their Pods) are labelled across all three identities; one replica killed with SIGKILL (no
// release) has its ReplicaSets relabelled to the other two, and a scale-up of one of them
// converges within LeaseDuration+RetryPeriod and some slack; and no ReplicaSet ever has more
// live Pods than it asked for, which two replicas reconciling the same ReplicaSet would cause.
func TestAPIServerShardedThreeProcesses(t *testing.T) {
	testShardedThreeProcesses(t, shardLabels)
}

// The same with admission-time assignment (deploy/sharding-webhook.yaml): the replicas serve
// the assignment webhook and the configuration points the API server at the replica that is
// killed later. Every ReplicaSet created before is labelled for a member, stamped for its
// process, in the Create response; one created after the kill is admitted unlabelled
// (failurePolicy Ignore) and converges all the same, assigned by the sharder.
func TestAPIServerShardedThreeProcessesWebhook(t *testing.T) {
	testShardedThreeProcesses(t, shardWebhook)
}

// The same in server-side mode (--feature-gates=ShardedListAndWatch=true, on an API server
// with that gate): no ReplicaSet or Pod is labelled; each member's hash slots are in its Lease
// and cover the hash space; the killed replica's slots, and so its ReplicaSets, move to the
// other two.
func TestAPIServerShardedThreeProcessesServerSide(t *testing.T) {
	testShardedThreeProcesses(t, shardServer)
}

// shardMode is how the three-process test's ring tells the replicas' shares apart.
type shardMode int

const (
	shardLabels  shardMode = iota // the sharder labels every ReplicaSet
	shardWebhook                  // the webhook labels them as they are created
	shardServer                   // hash slots in the Leases, selected by the API server
)

func testShardedThreeProcesses(t *testing.T, mode shardMode) {
	assignWebhook := mode == shardWebhook
	env := testkit.SharedAPIServer(t)
	var gateArgs []string
	if mode == shardServer {
		env = testkit.NewAPIServerWithOptions(t, testkit.APIServerOptions{FeatureGates: map[string]bool{"ShardedListAndWatch": true}})
		gateArgs = []string{"--feature-gates=" + string(demo.ShardedListAndWatch) + "=true"}
	}
	in := rbactest.ApplyFiles(t, env, "deploy/rbac.yaml", "deploy/sharding.yaml", "deploy/deployment.yaml")
	ctx, ns, client := env.Context(), env.Namespace(), env.Client()

	k, err := kubelet.New(client, kubelet.Options{Namespace: ns, StartupDelay: -1})
	require.NoError(t, err)
	env.RunController(ctx, k)
	over := watchOverlap(t, env)

	ids := []string{"rs-0", "rs-1", "rs-2"}
	var webhookArgs []string
	var ca []byte
	if assignWebhook {
		dir, b := testkit.WebhookCerts(t)
		webhookArgs, ca = []string{"--shard-webhook-addr=127.0.0.1:0", "--shard-webhook-cert-dir=" + dir}, b.CAPEM
	}
	procs := map[string]*process{}
	for _, id := range ids {
		procs[id] = startProcess(t, append(append(append([]string(nil), in.Args...),
			"--sharded", "--shard-identity="+id, "--shard-namespace="+ns,
			"--shard-lease-duration="+shardLeaseDuration.String(),
			"--shard-renew-deadline="+shardRenewDeadline.String(),
			"--shard-retry-period="+shardRetryPeriod.String(),
			"--metrics-addr=", "--kube-api-qps=50", "--kube-api-burst=100"), append(webhookArgs, gateArgs...)...))
	}
	// The replica to kill later is one that is not the sharder (the sharder's successor would
	// wait out its own Lease first, which is leader election's bound, not the ring's). In
	// webhook mode the API server calls it, so that creations after its death find no webhook.
	victim := nonSharder(t, client, ns, ids)
	if assignWebhook {
		installShardWebhook(t, env, procs[victim], ca, ids)
	}

	const n, replicas = 30, 2
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("rs-%02d", i)
		over.want(names[i], replicas)
		created, err := client.AppsV1().ReplicaSets(ns).Create(ctx, replicaSet(ns, names[i], "", replicas), metav1.CreateOptions{})
		require.NoError(t, err)
		if assignWebhook {
			member := created.Labels[sharding.Label(ShardRing)]
			assert.Contains(t, ids, member, "%s is assigned as it is created", names[i])
			assert.Equal(t, member, sharding.IdentityOfHolder(created.Annotations[sharding.HolderAnnotation(ShardRing)]),
				"%s is stamped for its member's process", names[i])
		}
	}
	for _, name := range names {
		awaitConverged(t, client, ns, name, replicas)
	}
	for id, p := range procs {
		lease, err := client.CoordinationV1().Leases(ns).Get(ctx, ShardRing+"."+id, metav1.GetOptions{})
		require.NoError(t, err, "the member Lease of %s", id)
		assert.NotEmpty(t, ptr.Deref(lease.Spec.HolderIdentity, ""), "%s holds its Lease", id)
		code, body := p.probe(t, "/readyz?verbose")
		assert.Equal(t, http.StatusOK, code, "%s: /readyz: %s", id, body)
	}
	await := awaitLabelled
	if mode == shardServer {
		await = awaitServed
	}
	owners := await(t, client, ns, n, ids)
	for _, id := range ids {
		// 10 each on average; a share below 3 or above 20 of 30 is not hashing noise.
		assert.GreaterOrEqual(t, len(owners[id]), 3, "%s's share: %v", id, owners)
		assert.LessOrEqual(t, len(owners[id]), 20, "%s's share: %v", id, owners)
	}

	moved := owners[victim]
	require.NotEmpty(t, moved)
	procs[victim].kill(t)
	killed := time.Now()

	scaled := moved[0]
	over.want(scaled, replicas+1)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rs, err := client.AppsV1().ReplicaSets(ns).Get(ctx, scaled, metav1.GetOptions{})
		if err != nil {
			return err
		}
		rs.Spec.Replicas = ptr.To[int32](replicas + 1)
		_, err = client.AppsV1().ReplicaSets(ns).Update(ctx, rs, metav1.UpdateOptions{})
		return err
	}))
	bound := shardLeaseDuration + shardRetryPeriod + shardSlack
	awaitConvergedWithin(t, client, ns, scaled, replicas+1, bound-time.Since(killed))
	took := time.Since(killed)
	var rest []string
	for _, id := range ids {
		if id != victim {
			rest = append(rest, id)
		}
	}
	survivors := await(t, client, ns, n, rest)
	assert.Empty(t, survivors[victim], "every ReplicaSet of %s moved", victim)
	t.Logf("%s killed: its %d ReplicaSets moved to the other two (%d and %d), %s scaled up and converged %v later",
		victim, len(moved), len(survivors[rest[0]]), len(survivors[rest[1]]), scaled, took.Round(time.Millisecond))
	for _, name := range moved[1:] {
		awaitConverged(t, client, ns, name, replicas)
	}
	if assignWebhook {
		// The webhook's replica is dead: failurePolicy Ignore admits the ReplicaSet unlabelled,
		// and the sharder assigns it as without the webhook.
		over.want("rs-late", replicas)
		created, err := client.AppsV1().ReplicaSets(ns).Create(ctx, replicaSet(ns, "rs-late", "", replicas), metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Empty(t, created.Labels[sharding.Label(ShardRing)], "no webhook answered")
		awaitConverged(t, client, ns, "rs-late", replicas)
		awaitLabelled(t, client, ns, n+1, rest)
	}

	for id, p := range procs {
		if id != victim {
			assert.Equal(t, demo.ExitOK, p.stop(t), "%s exits cleanly when interrupted", id)
		}
	}
	assert.Empty(t, over.violations(), "no ReplicaSet ever had more live Pods than it asked for")
}

// nonSharder waits until one of ids holds the ring's sharder Lease and returns the first other.
func nonSharder(t *testing.T, client kubernetes.Interface, ns string, ids []string) string {
	t.Helper()
	var victim string
	require.NoError(t, wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		lease, err := client.CoordinationV1().Leases(ns).Get(ctx, ShardRing+"-sharder", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		sharder := sharding.IdentityOfHolder(ptr.Deref(lease.Spec.HolderIdentity, ""))
		if !slices.Contains(ids, sharder) {
			return false, nil
		}
		for _, id := range ids {
			if id != sharder {
				victim = id
				return true, nil
			}
		}
		return false, nil
	}), "one of %v leading the ring", ids)
	return victim
}

// servingWebhooks is the webhook server's log line naming its address.
var servingWebhooks = regexp.MustCompile(`"Serving webhooks".* addr="([^"]+)"`)

// installShardWebhook installs deploy/sharding-webhook.yaml's configuration, pointed at p's
// webhook server, and waits until the API server calls it and p's assigner sees every one of ids
// live: dry-run creations under several names come back labelled for each of them (the
// configuration is taken up within about a second, and the assigner learns of a member from
// its Lease watch). It returns the configuration's name.
func installShardWebhook(t testing.TB, env *testkit.Env, p *process, ca []byte, ids []string) string {
	t.Helper()
	var addr string
	require.NoError(t, wait.PollUntilContextTimeout(env.Context(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		if m := servingWebhooks.FindStringSubmatch(p.out.String()); m != nil {
			addr = m[1]
		}
		return addr != "", nil
	}), "the webhook address in the log")
	f, err := os.Open("deploy/sharding-webhook.yaml")
	require.NoError(t, err)
	defer f.Close()
	var cfg *admissionregistrationv1.MutatingWebhookConfiguration
	for dec := yaml.NewYAMLOrJSONDecoder(f, 4096); ; {
		var doc map[string]any
		if err := dec.Decode(&doc); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		if doc["kind"] == "MutatingWebhookConfiguration" {
			cfg = &admissionregistrationv1.MutatingWebhookConfiguration{}
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(doc, cfg))
		}
	}
	require.NotNil(t, cfg, "deploy/sharding-webhook.yaml has a MutatingWebhookConfiguration")
	cfg.Name, cfg.GenerateName = "", cfg.Name+"-"+env.Namespace()+"-"
	installed, err := env.InstallMutatingWebhook(testkit.WebhookServer{URL: "https://" + addr, CABundle: ca}, cfg)
	require.NoError(t, err)
	seen := map[string]bool{}
	probe := 0
	require.NoError(t, wait.PollUntilContextTimeout(env.Context(), 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		probe++
		rs, err := env.Client().AppsV1().ReplicaSets(env.Namespace()).Create(ctx, replicaSet(env.Namespace(), fmt.Sprintf("probe-%d", probe), "", 0),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		if m := rs.Labels[sharding.Label(ShardRing)]; m != "" {
			seen[m] = true
		}
		for _, id := range ids {
			if !seen[id] {
				return false, nil
			}
		}
		return true, nil
	}), "the assignment webhook labelled (dry-run) ReplicaSets only for %v of %v", seen, ids)
	return installed.Name
}

// process is the example's binary (the test binary, run as main) in a process of its own.
type process struct {
	cmd  *exec.Cmd
	out  rbactest.LogBuffer
	done chan struct{}
	err  error // cmd.Wait's, once done is closed
}

func startProcess(t testing.TB, args []string) *process {
	t.Helper()
	p := &process{done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], args...)
	p.cmd.Env = append(os.Environ(), envRunMain+"=1", demo.EnvKubeconfig+"=")
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("output of %v:\n%s", args, p.out.String())
		}
	})
	return p
}

// stop sends SIGTERM (what a kubelet sends) and returns the exit code; a process that has not
// exited a minute later is killed and fails the test.
func (p *process) stop(t testing.TB) int {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(time.Minute):
			p.kill(t)
			t.Errorf("pid %d did not exit within a minute of SIGTERM", p.cmd.Process.Pid)
		}
	}
	return p.cmd.ProcessState.ExitCode()
}

// kill sends SIGKILL: no shutdown, no Lease released.
func (p *process) kill(t testing.TB) {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// servingHealth is the Manager's log line naming the address it serves the probes on.
var servingHealth = regexp.MustCompile(`"Serving" addr="([^"]+)" what=\[[^\]]*"health"`)

// probe asks the process's health address for path, once it logged it.
func (p *process) probe(t testing.TB, path string) (int, string) {
	t.Helper()
	var addr string
	require.NoError(t, wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		m := servingHealth.FindStringSubmatch(p.out.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil, nil
	}), "the health address in the log")
	var code int
	var body string
	_ = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		code, body = resp.StatusCode, string(b)
		return code == http.StatusOK, nil
	})
	return code, body
}

// awaitServed waits until the member Leases of ids serve the slots they are assigned and
// together the whole hash space, and returns the n ReplicaSets by the identity whose slots hold
// their UID; no ReplicaSet or Pod carries the ring's label.
func awaitServed(t *testing.T, client kubernetes.Interface, ns string, n int, ids []string) map[string][]string {
	t.Helper()
	var owners map[string][]string
	var why string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		bySlot := map[int]string{}
		for _, id := range ids {
			l, err := client.CoordinationV1().Leases(ns).Get(ctx, ShardRing+"."+id, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			assigned, serving := l.Annotations[sharding.SlotsAnnotation(ShardRing)], l.Annotations[sharding.ServingAnnotation(ShardRing)]
			if assigned == "" || assigned != serving {
				why = fmt.Sprintf("%s assigned %q, serving %q", id, assigned, serving)
				return false, nil
			}
			_, slots, err := sharding.ParseSlotRecord(serving)
			require.NoError(t, err)
			for _, slot := range slots {
				bySlot[slot] = id
			}
		}
		if len(bySlot) != sharding.Slots {
			why = fmt.Sprintf("%d of %d slots served by %v", len(bySlot), sharding.Slots, ids)
			return false, nil
		}
		rss, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		if len(rss.Items) != n {
			why = fmt.Sprintf("%d ReplicaSets, want %d", len(rss.Items), n)
			return false, nil
		}
		owners = map[string][]string{}
		for _, rs := range rss.Items {
			require.Empty(t, rs.Labels[sharding.Label(ShardRing)], "server-side: %s labelled", rs.Name)
			id := bySlot[sharding.SlotOf(string(rs.UID))]
			owners[id] = append(owners[id], rs.Name)
		}
		return true, nil
	})
	require.NoError(t, err, "waiting for the ring's slots: %s", why)
	pods, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	for _, pod := range pods.Items {
		require.Empty(t, pod.Labels[sharding.Label(ShardRing)], "server-side: pod %s labelled", pod.Name)
	}
	return owners
}

// awaitLabelled waits until every one of the n ReplicaSets, and every live Pod each controls,
// carries the ring's label naming one of ids, and returns the ReplicaSets by identity.
func awaitLabelled(t *testing.T, client kubernetes.Interface, ns string, n int, ids []string) map[string][]string {
	t.Helper()
	label := sharding.Label(ShardRing)
	var owners map[string][]string
	var why string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		rss, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		owners = map[string][]string{}
		byUID := map[string]string{}
		for _, rs := range rss.Items {
			owners[rs.Labels[label]] = append(owners[rs.Labels[label]], rs.Name)
			byUID[string(rs.UID)] = rs.Labels[label]
		}
		for _, id := range ids {
			delete(owners, id)
		}
		if len(owners) > 0 || len(rss.Items) != n {
			why = fmt.Sprintf("ReplicaSets not labelled for %v: %v", ids, owners)
			return false, nil
		}
		for _, pod := range pods.Items {
			ref := metav1.GetControllerOf(&pod)
			if ref == nil || pod.DeletionTimestamp != nil {
				continue
			}
			if pod.Labels[label] != byUID[string(ref.UID)] {
				why = fmt.Sprintf("pod %s labelled %q, its ReplicaSet %s %q", pod.Name, pod.Labels[label], ref.Name, byUID[string(ref.UID)])
				return false, nil
			}
		}
		owners = map[string][]string{}
		for _, rs := range rss.Items {
			owners[rs.Labels[label]] = append(owners[rs.Labels[label]], rs.Name)
		}
		return true, nil
	})
	require.NoError(t, err, "waiting for the ring's labels: %s", why)
	return owners
}

// awaitConvergedWithin is awaitConverged with a deadline of its own.
func awaitConvergedWithin(t *testing.T, client kubernetes.Interface, ns, name string, want int32, within time.Duration) {
	t.Helper()
	var rs *appsv1.ReplicaSet
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		var err error
		if rs, err = client.AppsV1().ReplicaSets(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		st := rs.Status
		return st.ObservedGeneration == rs.Generation && st.Replicas == want && st.ReadyReplicas == want && st.AvailableReplicas == want, nil
	})
	require.NoError(t, err, "replicaset %s converging to %d within %v: status %+v", name, want, within, rs.Status)
}

// overlap watches every Pod of the namespace and records each moment a ReplicaSet has more
// live Pods (controlled by it, not being deleted) than the test asked for: with two replicas
// reconciling one ReplicaSet, both would create its missing Pods.
type overlap struct {
	ns     string // the test's: the shared server has other tests' ReplicaSets
	mu     sync.Mutex
	wanted map[string]int32           // ReplicaSet -> the most replicas it was asked for
	live   map[string]map[string]bool // ReplicaSet -> live Pods
	bad    []string
}

func watchOverlap(t *testing.T, env *testkit.Env) *overlap {
	t.Helper()
	o := &overlap{ns: env.Namespace(), wanted: map[string]int32{}, live: map[string]map[string]bool{}}
	pods, err := informer.For[*corev1.Pod](env.Factory())
	require.NoError(t, err)
	_, err = pods.AddHandler(informer.HandlerFuncs[*corev1.Pod]{
		OnAdd:    func(p *corev1.Pod, _ bool) { o.observe(p, true) },
		OnUpdate: func(_, p *corev1.Pod) { o.observe(p, true) },
		OnDelete: func(p *corev1.Pod) { o.observe(p, false) },
	})
	require.NoError(t, err)
	env.Sync()
	return o
}

// want records that rs is asked for replicas Pods, before the request is sent.
func (o *overlap) want(rs string, replicas int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.wanted[rs] = max(o.wanted[rs], replicas)
}

// observe takes a Pod or its metadata.
func (o *overlap) observe(p metav1.Object, present bool) {
	ref := metav1.GetControllerOf(p)
	if ref == nil || ref.Kind != "ReplicaSet" || p.GetNamespace() != o.ns {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	set := o.live[ref.Name]
	if set == nil {
		set = map[string]bool{}
		o.live[ref.Name] = set
	}
	if present && p.GetDeletionTimestamp() == nil {
		set[p.GetName()] = true
	} else {
		delete(set, p.GetName())
	}
	if int32(len(set)) > o.wanted[ref.Name] {
		o.bad = append(o.bad, fmt.Sprintf("%s: %d live Pods, %d wanted", ref.Name, len(set), o.wanted[ref.Name]))
	}
}

func (o *overlap) violations() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.bad
}
