package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/internal/kubelet"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/sharding"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// The work of issue 17's benchmark: 200 ReplicaSets of 5 Pods.
const (
	benchReplicaSetsDefault = 200
	benchReplicas           = 5
	// benchCreators create the ReplicaSets in parallel, so the start of the work is not
	// spread over a second of sequential requests.
	benchCreators = 8
	// benchConvergeTimeout bounds one run's convergence: 1000 Pod creations at 20 QPS take
	// about a minute with one member; a loaded machine may need several.
	benchConvergeTimeout = 10 * time.Minute
	// benchSettleTimeout bounds start-up, the ring's settling and the teardown.
	benchSettleTimeout = 2 * time.Minute
)

// Knobs for attributing a member's heap (docs/performance.md, "What a member keeps"):
// envBenchReplicaSets replaces the 200 ReplicaSets by another count, and envBenchHeapProfiles
// names a directory where each member's heap profile (after a forced GC) is saved before and
// after the work, for go tool pprof -diff_base; the members then record every allocation
// (GODEBUG=memprofilerate=1), as the default sampling (one per 512 kB) cannot attribute a
// megabyte.
const (
	envBenchReplicaSets  = "CTRLKIT_BENCH_REPLICASETS"
	envBenchHeapProfiles = "CTRLKIT_BENCH_HEAP_PROFILES"
)

// benchReplicaSets is the number of ReplicaSets of one run: envBenchReplicaSets, else 200.
func benchReplicaSets(b *testing.B) int {
	b.Helper()
	v := os.Getenv(envBenchReplicaSets)
	if v == "" {
		return benchReplicaSetsDefault
	}
	n, err := strconv.Atoi(v)
	require.NoError(b, err, "%s", envBenchReplicaSets)
	require.Positive(b, n, "%s", envBenchReplicaSets)
	return n
}

// benchRuns numbers the runs of the process, so each run's ReplicaSets have names of their own:
// the ring hashes namespace/name, and fixed names would give every run the same split.
var benchRuns atomic.Int64

// BenchmarkShardedConverge runs the example binary sharded as 1, 2 and 3 processes against a
// real API server of its own (the ring watches every namespace, so a server shared with other
// tests would hand it their ReplicaSets) and measures how long the same work takes to converge,
// and the heap each member holds. Each iteration is one full run: run it with
// -benchtime=1x -count=N (docs/performance.md, "Sharding: 1, 2 and 3 members").
//
// Per iteration: N processes with --sharded, a distinct --shard-identity, kube-controller-
// manager's client limits (--kube-api-qps=20 --kube-api-burst=30, per member), the default
// --workers, the shipped rbac.yaml and sharding.yaml as their only rights, and pprof on
// plain-HTTP metrics servers on loopback. Once every member answers /readyz with 200, the
// sharder Lease is held by one of them and that sharder counts N live members, each member's
// heap is read; then the timer runs while 200 ReplicaSets of 5 Pods are created (by an
// unthrottled client) and until every one has observedGeneration == generation and
// replicas == readyReplicas == availableReplicas == 5 (names differ per run, so each run draws
// its own split of them between the members). A simulated kubelet in the benchmark's
// process (unthrottled, no start-up delay) binds the Pods and makes them ready. The members
// are then stopped with SIGTERM and the work deleted, untimed.
//
// Metrics: converge-s (ns/op is the same time, as the timer runs only then), heap-MB/member
// (the largest member's HeapAlloc after two forced GCs, from /debug/pprof/heap?gc=1&debug=1, in
// 10^6 bytes), cache-MB/member (the same minus that member's figure before the work was
// created) and rs/member (the most ReplicaSets labelled for one member). With b.N > 1 each is
// the mean over the iterations. Each run also logs, per member, its ReplicaSets, its heap
// before and after, and the requests it made while the timer ran (by method) with the time
// they waited in its client-side rate limiters.
func BenchmarkShardedConverge(b *testing.B) {
	env := testkit.NewAPIServer(b)
	in := rbactest.ApplyFiles(b, env, "deploy/rbac.yaml", "deploy/sharding.yaml", "deploy/deployment.yaml")
	k, err := kubelet.New(env.Client(), kubelet.Options{Namespace: in.Namespace, StartupDelay: -1})
	require.NoError(b, err)
	env.RunController(env.Context(), k)
	if os.Getenv(envBenchHeapProfiles) != "" {
		// The API server and etcd run already, so only the members see this.
		b.Setenv("GODEBUG", strings.TrimPrefix(os.Getenv("GODEBUG")+",memprofilerate=1", ","))
	}

	for _, members := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("members=%d", members), func(b *testing.B) {
			var sum benchResult
			for range b.N {
				r := runShardedConverge(b, env.Client(), in, members, benchReplicaSets(b))
				sum.converge += r.converge
				sum.heap += r.heap
				sum.cache += r.cache
				sum.rs += r.rs
			}
			n := float64(b.N)
			b.ReportMetric(sum.converge.Seconds()/n, "converge-s")
			b.ReportMetric(sum.heap/n/1e6, "heap-MB/member")
			b.ReportMetric(sum.cache/n/1e6, "cache-MB/member")
			b.ReportMetric(float64(sum.rs)/n, "rs/member")
		})
	}
}

// benchResult is one run's figures; heap and cache are in bytes, each the largest member's.
type benchResult struct {
	converge    time.Duration
	heap, cache float64
	rs          int
}

// runShardedConverge is one iteration of BenchmarkShardedConverge with members processes and
// n ReplicaSets.
func runShardedConverge(b *testing.B, client kubernetes.Interface, in *rbactest.Install, members, n int) benchResult {
	b.StopTimer()
	ns, run := in.Namespace, benchRuns.Add(1)
	hc := &http.Client{Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()

	ids := make([]string, members)
	procs := map[string]*process{}
	for i := range ids {
		ids[i] = fmt.Sprintf("m-%d", i)
		procs[ids[i]] = startProcess(b, append(append([]string(nil), in.Args...),
			"--sharded", "--shard-identity="+ids[i], "--shard-namespace="+ns,
			"--kube-api-qps=20", "--kube-api-burst=30",
			"--metrics-secure=false", "--profiling"))
	}
	for _, id := range ids {
		code, body := procs[id].probe(b, "/readyz?verbose")
		require.Equal(b, http.StatusOK, code, "%s: /readyz: %s", id, body)
	}
	sharder := awaitRingSettled(b, hc, client, ns, procs)

	before := map[string]heapStats{}
	reqBefore := map[string]clientStats{}
	for _, id := range ids {
		before[id] = readHeap(b, hc, procs[id])
		saveHeapProfile(b, hc, procs[id], fmt.Sprintf("members=%d-run=%d-%s-before.pb.gz", members, run, id))
		reqBefore[id] = readClientStats(b, hc, procs[id])
	}

	b.StartTimer()
	start := time.Now()
	createWork(b, client, ns, run, n)
	awaitWorkConverged(b, client, ns, procs, n)
	converge := time.Since(start)
	b.StopTimer()

	r := benchResult{converge: converge}
	owned := labelledFor(b, client, ns, ids)
	for _, id := range ids {
		reqs := readClientStats(b, hc, procs[id]).minus(reqBefore[id])
		b.Logf("%s: during the run %s, %.1f s waited in the client's rate limiters (summed over requests)",
			id, reqs.requestsString(), reqs.limiterWait)
		after := readHeap(b, hc, procs[id])
		saveHeapProfile(b, hc, procs[id], fmt.Sprintf("members=%d-run=%d-%s-after.pb.gz", members, run, id))
		cache := float64(after.alloc) - float64(before[id].alloc)
		r.heap, r.cache, r.rs = max(r.heap, float64(after.alloc)), max(r.cache, cache), max(r.rs, owned[id])
		b.Logf("%s: %d ReplicaSets; HeapAlloc after GC %.1f MB before the work, %.1f MB converged (HeapInuse %.1f → %.1f MB)",
			id, owned[id], float64(before[id].alloc)/1e6, float64(after.alloc)/1e6, float64(before[id].inuse)/1e6, float64(after.inuse)/1e6)
	}
	b.Logf("members=%d (sharder %s): converged in %v", members, sharder, converge.Round(time.Millisecond))

	for _, id := range ids {
		if code := procs[id].stop(b); code != demo.ExitOK {
			b.Errorf("%s exited %d on SIGTERM:\n%s", id, code, procs[id].out.String())
		}
	}
	deleteWork(b, client, ns)
	return r
}

// awaitRingSettled waits until one of procs holds the sharder Lease and counts every one of
// procs as a live member, so the work is assigned to all of them from the start rather than
// moved as late members join; it returns the sharder's identity.
func awaitRingSettled(b *testing.B, hc *http.Client, client kubernetes.Interface, ns string, procs map[string]*process) string {
	b.Helper()
	var sharder, why string
	err := wait.PollUntilContextTimeout(b.Context(), 100*time.Millisecond, benchSettleTimeout, true, func(ctx context.Context) (bool, error) {
		lease, err := client.CoordinationV1().Leases(ns).Get(ctx, ShardRing+"-sharder", metav1.GetOptions{})
		if err != nil {
			why = err.Error()
			return false, nil
		}
		holder := ptr.Deref(lease.Spec.HolderIdentity, "")
		sharder = sharding.IdentityOfHolder(holder)
		p := procs[sharder]
		if p == nil {
			why = fmt.Sprintf("the sharder Lease is held by %q", holder)
			return false, nil
		}
		live, err := shardMembers(hc, p)
		if err != nil {
			why = err.Error()
			return false, nil
		}
		why = fmt.Sprintf("sharder %s sees %d live members", sharder, live)
		return live == len(procs), nil
	})
	require.NoError(b, err, "waiting for the ring to settle: %s", why)
	return sharder
}

// servingMetrics is the Manager's log line naming its metrics server's address (possibly
// shared with the probes).
var servingMetrics = regexp.MustCompile(`"Serving" addr="([^"]+)" what=\[[^\]]*"metrics"`)

// metricsAddr is the address p serves /metrics and /debug/pprof/ on, once it logged it.
func (p *process) metricsAddr() (string, error) {
	if m := servingMetrics.FindStringSubmatch(p.out.String()); m != nil {
		return m[1], nil
	}
	return "", errors.New("the metrics address is not logged yet")
}

// membersGauge is the sharder's count of live members of the example's ring.
var membersGauge = regexp.MustCompile(`(?m)^ctrlkit_shard_members\{ring="` + ShardRing + `"\} (\S+)$`)

// shardMembers reads ctrlkit_shard_members of the example's ring from p's /metrics.
func shardMembers(hc *http.Client, p *process) (int, error) {
	body, err := get(hc, p, "/metrics")
	if err != nil {
		return 0, err
	}
	m := membersGauge.FindStringSubmatch(body)
	if m == nil {
		return 0, errors.New("no ctrlkit_shard_members series yet")
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return int(v), err
}

// heapStats are runtime.MemStats figures read right after two forced GCs (heapAfterGC).
type heapStats struct{ alloc, inuse uint64 }

// memStat matches a runtime.MemStats line of the heap profile's debug=1 form.
var memStat = regexp.MustCompile(`(?m)^# (HeapAlloc|HeapInuse) = (\d+)$`)

// readHeap reads p's heap with heapAfterGC.
func readHeap(b *testing.B, hc *http.Client, p *process) heapStats {
	b.Helper()
	h, err := heapAfterGC(func(path string) (string, error) { return get(hc, p, path) })
	require.NoError(b, err)
	return h
}

// heapAfterGC forces two GCs in a process (gc=1, twice, through get, which fetches a path from
// its pprof server) and reads HeapAlloc (the live heap, as the GC just ran) and HeapInuse from
// the runtime.MemStats lines of the heap profile's text form. One GC is not enough: it moves
// what sync.Pools hold to their victim caches, where it stays live until the next, and whether
// a pool holds something depends on what was last asked of the process, not on what it keeps
// (promhttp pools a gzip writer for each /metrics answer to a client that accepts gzip, and the
// run reads every member's /metrics just before its reading after the work).
func heapAfterGC(get func(path string) (string, error)) (heapStats, error) {
	const path = "/debug/pprof/heap?gc=1&debug=1"
	if _, err := get(path); err != nil {
		return heapStats{}, err
	}
	body, err := get(path)
	if err != nil {
		return heapStats{}, err
	}
	var h heapStats
	for _, m := range memStat.FindAllStringSubmatch(body, -1) {
		v, err := strconv.ParseUint(m[2], 10, 64)
		if err != nil {
			return heapStats{}, fmt.Errorf("%s in the heap profile: %w", m[1], err)
		}
		if m[1] == "HeapAlloc" {
			h.alloc = v
		} else {
			h.inuse = v
		}
	}
	if h.alloc == 0 {
		return heapStats{}, errors.New("no HeapAlloc in the heap profile")
	}
	return h, nil
}

// saveHeapProfile saves p's heap profile, taken after a forced GC, as name in the directory
// envBenchHeapProfiles names; without it, it does nothing.
func saveHeapProfile(b *testing.B, hc *http.Client, p *process, name string) {
	b.Helper()
	dir := os.Getenv(envBenchHeapProfiles)
	if dir == "" {
		return
	}
	body, err := get(hc, p, "/debug/pprof/heap?gc=1")
	require.NoError(b, err)
	require.NoError(b, os.MkdirAll(dir, 0o755))
	path := filepath.Join(dir, name)
	require.NoError(b, os.WriteFile(path, []byte(body), 0o644))
	b.Logf("heap profile saved in %s", path)
}

// clientStats are a member's client-go request counters from its /metrics.
type clientStats struct {
	requests    map[string]float64 // by HTTP method
	limiterWait float64            // seconds, summed over the requests
}

var (
	requestsTotal  = regexp.MustCompile(`(?m)^rest_client_requests_total\{[^}]*method="([A-Z]+)"[^}]*\} (\S+)$`)
	limiterWaitSum = regexp.MustCompile(`(?m)^rest_client_rate_limiter_duration_seconds_sum\{[^}]*\} (\S+)$`)
)

// readClientStats reads p's rest_client_requests_total, summed by method, and the total of
// rest_client_rate_limiter_duration_seconds: what the member asked of the API server, and how
// long its requests waited for their QPS budget.
func readClientStats(b *testing.B, hc *http.Client, p *process) clientStats {
	b.Helper()
	body, err := get(hc, p, "/metrics")
	require.NoError(b, err)
	s := clientStats{requests: map[string]float64{}}
	for _, m := range requestsTotal.FindAllStringSubmatch(body, -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		require.NoError(b, err)
		s.requests[m[1]] += v
	}
	for _, m := range limiterWaitSum.FindAllStringSubmatch(body, -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		require.NoError(b, err)
		s.limiterWait += v
	}
	return s
}

// minus is s since earlier.
func (s clientStats) minus(earlier clientStats) clientStats {
	d := clientStats{requests: map[string]float64{}, limiterWait: s.limiterWait - earlier.limiterWait}
	for method, v := range s.requests {
		if v -= earlier.requests[method]; v != 0 {
			d.requests[method] = v
		}
	}
	return d
}

// requestsString lists the requests by method, sorted, with their total.
func (s clientStats) requestsString() string {
	var parts []string
	total := 0.0
	for _, method := range slices.Sorted(maps.Keys(s.requests)) {
		parts = append(parts, fmt.Sprintf("%s %.0f", method, s.requests[method]))
		total += s.requests[method]
	}
	return fmt.Sprintf("%.0f requests (%s)", total, strings.Join(parts, ", "))
}

// get fetches path from p's metrics server and returns the body of a 200 answer.
func get(hc *http.Client, p *process, path string) (string, error) {
	addr, err := p.metricsAddr()
	if err != nil {
		return "", err
	}
	resp, err := hc.Get("http://" + addr + path)
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

// createWork creates the benchmark's n ReplicaSets of run in ns, benchCreators at a time.
func createWork(b *testing.B, client kubernetes.Interface, ns string, run int64, n int) {
	b.Helper()
	rss := make([]*appsv1.ReplicaSet, n)
	for i := range rss {
		rss[i] = replicaSet(ns, fmt.Sprintf("bench-%d-%03d", run, i), "", benchReplicas)
	}
	createReplicaSets(b, client, benchCreators, rss)
}

// createReplicaSets creates rss, creators at a time, and fails b with every error.
func createReplicaSets(b *testing.B, client kubernetes.Interface, creators int, rss []*appsv1.ReplicaSet) {
	b.Helper()
	ch := make(chan *appsv1.ReplicaSet)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for range creators {
		wg.Go(func() {
			for rs := range ch { // after a failure too, so the sender never blocks
				_, err := client.AppsV1().ReplicaSets(rs.Namespace).Create(b.Context(), rs, metav1.CreateOptions{})
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("create replicaset %s: %w", rs.Name, err))
					mu.Unlock()
				}
			}
		})
	}
	for _, rs := range rss {
		ch <- rs
	}
	close(ch)
	wg.Wait()
	require.NoError(b, errors.Join(errs...))
}

// exitedMember returns an error naming a member of procs that has exited, with its output.
func exitedMember(procs map[string]*process) error {
	for id, p := range procs {
		select {
		case <-p.done:
			return fmt.Errorf("member %s exited (%v):\n%s", id, p.err, p.out.String())
		default:
		}
	}
	return nil
}

// awaitWorkConverged waits until the n ReplicaSets in ns report benchReplicas ready and
// available replicas for their current generation. A member that exits meanwhile fails the run.
func awaitWorkConverged(b *testing.B, client kubernetes.Interface, ns string, procs map[string]*process, n int) {
	b.Helper()
	var why string
	err := wait.PollUntilContextTimeout(b.Context(), 200*time.Millisecond, benchConvergeTimeout, true, func(ctx context.Context) (bool, error) {
		if err := exitedMember(procs); err != nil {
			return false, err
		}
		list, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		done := 0
		for _, rs := range list.Items {
			st := rs.Status
			if st.ObservedGeneration == rs.Generation && st.Replicas == benchReplicas &&
				st.ReadyReplicas == benchReplicas && st.AvailableReplicas == benchReplicas {
				done++
			}
		}
		why = fmt.Sprintf("%d of %d ReplicaSets converged", done, len(list.Items))
		return done == n && len(list.Items) == n, nil
	})
	require.NoError(b, err, "waiting for the work to converge: %s", why)
}

// labelledFor counts the ReplicaSets in ns labelled for each of ids, and fails the run when one
// is labelled for no one of them.
func labelledFor(b *testing.B, client kubernetes.Interface, ns string, ids []string) map[string]int {
	b.Helper()
	list, err := client.AppsV1().ReplicaSets(ns).List(b.Context(), metav1.ListOptions{})
	require.NoError(b, err)
	owned := map[string]int{}
	for _, rs := range list.Items {
		owned[rs.Labels[sharding.Label(ShardRing)]]++
	}
	total := 0
	for _, id := range ids {
		total += owned[id]
	}
	require.Equal(b, len(list.Items), total, "every ReplicaSet is labelled for one of %v: %v", ids, owned)
	return owned
}

// deleteWork deletes the ReplicaSets and their Pods (at once: the members are stopped and the
// server has no garbage collector) and waits until they are gone, so the next run starts from
// an empty namespace.
func deleteWork(b *testing.B, client kubernetes.Interface, ns string) {
	b.Helper()
	ctx := b.Context()
	require.NoError(b, client.AppsV1().ReplicaSets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
	require.NoError(b, client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}))
	var why string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, benchSettleTimeout, true, func(ctx context.Context) (bool, error) {
		rss, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		why = fmt.Sprintf("%d ReplicaSets and %d Pods left", len(rss.Items), len(pods.Items))
		return len(rss.Items) == 0 && len(pods.Items) == 0, nil
	})
	require.NoError(b, err, "deleting the work: %s", why)
}
