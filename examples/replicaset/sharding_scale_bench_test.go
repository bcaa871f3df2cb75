package main

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
	"github.com/ctrlkit/ctrlkit/sharding"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// The scale benchmark's knobs: envScaleObjects replaces the object counts (a comma-separated
// list) of BenchmarkShardRebalance.
const envScaleObjects = "CTRLKIT_BENCH_SHARD_OBJECTS"

var (
	appsReplicaSets = appsv1.SchemeGroupVersion.WithResource("replicasets")
	corePods        = corev1.SchemeGroupVersion.WithResource("pods")
)

const (
	// scaleCreators create the ReplicaSets in parallel before any member starts.
	scaleCreators = 32
	// scalePodEvery is the share of the ReplicaSets that have one replica (every 20th): their
	// Pods follow them on each move, and the overlap checker sees a second Pod if two members
	// ever reconcile one of them at once. The others have none, as in issue 36's measurement.
	scalePodEvery = 20
	// scaleStepTimeout bounds one step (assign, join, leave).
	scaleStepTimeout = 10 * time.Minute
)

// BenchmarkShardRebalance measures what sharding costs at scale, issue 36's workload, against a
// real API server of its own: N ReplicaSets exist before the ring does (every 20th with one
// replica, the others with none); three processes of `examples/replicaset --sharded` start, with
// the controllers' --kube-api-qps=20 and the ring's default write budget, and the time until
// every ReplicaSet is labelled for the member the ring over the three assigns it (and none is
// draining) is assign-s; a fourth starts, and the time until every ReplicaSet sits where the
// ring over four puts it is join-s; the fourth stops (SIGTERM: it releases its Lease) and the
// time until its ReplicaSets are back on the three is leave-s. Last, N/10 ReplicaSets are
// created while the ring runs: create-s is the time from the first creation until all are
// assigned, and sharder-writes/created the assignment labels the sharder wrote for them (its
// ctrlkit_shard_reassignments_total, summed over the members). Each step's end is read from a
// metadata informer of the benchmark's own, checked every 50 ms. A second Pod of any
// ReplicaSet at any point (two members reconciling it at once) fails the run.
//
// mode=label is the sharder alone; mode=webhook adds admission-time assignment (every member
// serves deploy/sharding-webhook.yaml's webhook, the configuration points at the first);
// mode=server is the server-side mode (--feature-gates=ShardedListAndWatch=true, against a
// second API server with that gate): a step ends when the member Leases of the ring's members
// serve the slots they are assigned and together the whole hash space, and a ReplicaSet's
// member is the one serving its UID's slot; no object is written, so create-s is not measured
// (a new object belongs to its slot's member as it is created) and sharder-writes/created is
// what the sharder labelled (0). One iteration is one full run: -benchtime=1x -count=N
// (docs/performance.md, "Sharding at scale").
func BenchmarkShardRebalance(b *testing.B) {
	env := testkit.NewAPIServer(b)
	in := rbactest.ApplyFiles(b, env, "deploy/rbac.yaml", "deploy/sharding.yaml", "deploy/deployment.yaml")
	var gated *testkit.Env
	var gatedIn *rbactest.Install
	parent := b // the gated server outlives the sub-benchmark that starts it
	for _, mode := range []string{"label", "webhook", "server"} {
		for _, n := range scaleObjects(b) {
			b.Run(fmt.Sprintf("mode=%s/objects=%d", mode, n), func(b *testing.B) {
				env, in := env, in
				if mode == "server" {
					if gated == nil {
						gated = testkit.NewAPIServerWithOptions(parent, testkit.APIServerOptions{FeatureGates: map[string]bool{"ShardedListAndWatch": true}})
						gatedIn = rbactest.ApplyFiles(parent, gated, "deploy/rbac.yaml", "deploy/sharding.yaml", "deploy/deployment.yaml")
					}
					env, in = gated, gatedIn
				}
				var sum scaleResult
				for range b.N {
					r := runShardRebalance(b, env, in, n, mode)
					sum.assign += r.assign
					sum.join += r.join
					sum.leave += r.leave
					sum.create += r.create
					sum.moved += r.moved
					sum.createWrites += r.createWrites
				}
				k := float64(b.N)
				b.ReportMetric(sum.assign.Seconds()/k, "assign-s")
				b.ReportMetric(sum.join.Seconds()/k, "join-s")
				b.ReportMetric(sum.leave.Seconds()/k, "leave-s")
				if mode != "server" {
					b.ReportMetric(sum.create.Seconds()/k, "create-s")
				}
				b.ReportMetric(float64(sum.moved)/k, "moved-on-join")
				b.ReportMetric(sum.createWrites/k/float64(max(1, n/10)), "sharder-writes/created")
			})
		}
	}
}

// scaleObjects is the object counts of BenchmarkShardRebalance: envScaleObjects, else 10^3 and
// 10^4.
func scaleObjects(b *testing.B) []int {
	b.Helper()
	v := os.Getenv(envScaleObjects)
	if v == "" {
		return []int{1000, 10000}
	}
	var out []int
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		require.NoError(b, err, "%s", envScaleObjects)
		require.Positive(b, n, "%s", envScaleObjects)
		out = append(out, n)
	}
	return out
}

type scaleResult struct {
	assign, join, leave, create time.Duration
	moved                       int
	createWrites                float64
}

// runShardRebalance is one iteration of BenchmarkShardRebalance over n ReplicaSets in mode
// (label, webhook or server).
func runShardRebalance(b *testing.B, env *testkit.Env, in *rbactest.Install, n int, mode string) scaleResult {
	b.StopTimer()
	assignWebhook, serverSide := mode == "webhook", mode == "server"
	ns, run := in.Namespace, benchRuns.Add(1)
	client := env.Client()
	hc := &http.Client{Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	over := &overlap{ns: ns, wanted: map[string]int32{}, live: map[string]map[string]bool{}}
	created := max(1, n/10)
	names := make([]string, n+created)
	for i := range names {
		names[i] = fmt.Sprintf("scale-%d-%05d", run, i)
		if i%scalePodEvery == 0 {
			over.want(names[i], 1)
		}
	}
	createScaleWork(b, env, ns, names[:n], 0)
	w := watchAssignments(b, env, ns, over)
	defer w.stop()
	if serverSide {
		w.client = env.Client()
	}

	var webhookArgs []string
	var ca []byte
	if assignWebhook {
		dir, bundle := testkit.WebhookCerts(b)
		webhookArgs, ca = []string{"--shard-webhook-addr=127.0.0.1:0", "--shard-webhook-cert-dir=" + dir}, bundle.CAPEM
	}
	if serverSide {
		webhookArgs = []string{"--feature-gates=" + string(demo.ShardedListAndWatch) + "=true"}
	}
	members := func(ids ...string) map[string]*process {
		procs := map[string]*process{}
		for _, id := range ids {
			procs[id] = startProcess(b, append(append(append([]string(nil), in.Args...),
				"--sharded", "--shard-identity="+id, "--shard-namespace="+ns,
				"--kube-api-qps=20", "--kube-api-burst=30", "--metrics-secure=false"), webhookArgs...))
		}
		return procs
	}
	var r scaleResult
	ids := []string{"m-0", "m-1", "m-2"}
	start := time.Now()
	procs := members(ids...)
	w.await(b, procs, ids, n)
	r.assign = time.Since(start)
	// Untimed: the Pods of the ReplicaSets that want one, so the moves carry children.
	awaitScalePods(b, w, procs, (n+scalePodEvery-1)/scalePodEvery)

	before := w.owners()
	joined := append(slices.Clone(ids), "m-3")
	start = time.Now()
	maps.Copy(procs, members("m-3"))
	w.await(b, procs, joined, n)
	r.join = time.Since(start)
	for key, m := range w.owners() {
		if before[key] != m {
			r.moved++
		}
	}

	start = time.Now()
	if code := procs["m-3"].stop(b); code != demo.ExitOK {
		b.Errorf("m-3 exited %d on SIGTERM:\n%s", code, procs["m-3"].out.String())
	}
	delete(procs, "m-3")
	w.await(b, procs, ids, n)
	r.leave = time.Since(start)

	if assignWebhook {
		name := installShardWebhook(b, env, procs[ids[0]], ca, ids)
		defer func() {
			// The next run's members serve elsewhere.
			err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
			require.NoError(b, err)
		}()
	}
	writes := sharderWrites(b, hc, procs)
	start = time.Now()
	createScaleWork(b, env, ns, names[n:], n)
	w.await(b, procs, ids, n+created)
	r.create = time.Since(start)
	r.createWrites = sharderWrites(b, hc, procs) - writes
	if serverSide {
		for _, obj := range w.rss.GetStore().List() {
			m := obj.(*metav1.PartialObjectMetadata)
			require.Empty(b, m.Labels[sharding.Label(ShardRing)], "server-side: %s labelled", m.Name)
		}
	}

	require.Empty(b, over.violations(), "a ReplicaSet had more Pods than it wants: two members reconciled it at once")
	b.Logf("objects=%d mode=%s: assigned to 3 in %v; the 4th took %d in %v; its leave took %v; %d created with the ring running were assigned in %v, the sharder labelling %.0f of them",
		n, mode, r.assign.Round(time.Millisecond), r.moved, r.join.Round(time.Millisecond), r.leave.Round(time.Millisecond),
		created, r.create.Round(time.Millisecond), r.createWrites)
	for id, p := range procs {
		if code := p.stop(b); code != demo.ExitOK {
			b.Errorf("%s exited %d on SIGTERM:\n%s", id, code, p.out.String())
		}
	}
	deleteWork(b, client, ns)
	return r
}

// reassignments matches the sharder's ctrlkit_shard_reassignments_total series on /metrics.
var reassignments = regexp.MustCompile(`(?m)^ctrlkit_shard_reassignments_total\{[^}]*\} ([0-9.e+]+)$`)

// sharderWrites sums ctrlkit_shard_reassignments_total over the members: the assignment labels
// written by whichever of them leads the ring.
func sharderWrites(b *testing.B, hc *http.Client, procs map[string]*process) float64 {
	b.Helper()
	total := 0.0
	for id, p := range procs {
		var body string
		require.NoError(b, wait.PollUntilContextTimeout(b.Context(), 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			var err error
			body, err = get(hc, p, "/metrics")
			return err == nil, nil
		}), "%s's /metrics", id)
		for _, m := range reassignments.FindAllStringSubmatch(body, -1) {
			v, err := strconv.ParseFloat(m[1], 64)
			require.NoError(b, err)
			total += v
		}
	}
	return total
}

// createScaleWork creates the ReplicaSets, scaleCreators at a time; names[i] is the
// (first+i)th, which has one replica when that is a multiple of scalePodEvery.
func createScaleWork(b *testing.B, env *testkit.Env, ns string, names []string, first int) {
	b.Helper()
	rss := make([]*appsv1.ReplicaSet, len(names))
	for i, name := range names {
		replicas := int32(0)
		if (first+i)%scalePodEvery == 0 {
			replicas = 1
		}
		rss[i] = replicaSet(ns, name, "", replicas)
	}
	createReplicaSets(b, env.Client(), scaleCreators, rss)
}

// assignments caches the metadata of the namespace's ReplicaSets and Pods.
type assignments struct {
	ns string
	// client, when set, reads the member Leases of a server-side ring: a ReplicaSet's member
	// is the one serving its UID's slot.
	client kubernetes.Interface
	// bySlot is the member serving each slot, as the last await read it.
	bySlot map[int]string
	rss    cache.SharedIndexInformer
	pods   cache.SharedIndexInformer
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func watchAssignments(b *testing.B, env *testkit.Env, ns string, over *overlap) *assignments {
	b.Helper()
	meta, err := metadata.NewForConfig(env.Config())
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	f := metadatainformer.NewFilteredSharedInformerFactory(meta, 0, ns, nil)
	a := &assignments{ns: ns, cancel: cancel,
		rss:  f.ForResource(appsReplicaSets).Informer(),
		pods: f.ForResource(corePods).Informer(),
	}
	observe := func(obj any, present bool) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
			over.observe(m, present)
		}
	}
	_, err = a.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { observe(obj, true) },
		UpdateFunc: func(_, obj any) { observe(obj, true) },
		DeleteFunc: func(obj any) { observe(obj, false) },
	})
	require.NoError(b, err)
	a.wg.Go(func() { f.Start(ctx.Done()); f.WaitForCacheSync(ctx.Done()); <-ctx.Done(); f.Shutdown() })
	require.True(b, cache.WaitForCacheSync(b.Context().Done(), a.rss.HasSynced, a.pods.HasSynced))
	return a
}

func (a *assignments) stop() {
	a.cancel()
	a.wg.Wait()
}

// owners maps each ReplicaSet's key to its assignment label, or in server-side mode to the
// member serving its slot.
func (a *assignments) owners() map[string]string {
	out := map[string]string{}
	for _, obj := range a.rss.GetStore().List() {
		m := obj.(*metav1.PartialObjectMetadata)
		owner := m.Labels[sharding.Label(ShardRing)]
		if a.client != nil {
			owner = a.bySlot[sharding.SlotOf(string(m.UID))]
		}
		out[m.Namespace+"/"+m.Name] = owner
	}
	return out
}

// await waits until each of the n ReplicaSets is labelled for the member the ring over ids
// assigns it, stamped for a holder and not draining; in server-side mode, until the members
// ids serve what they are assigned, together every slot, and the n ReplicaSets are cached. A
// member that exits meanwhile fails it.
func (a *assignments) await(b *testing.B, procs map[string]*process, ids []string, n int) {
	b.Helper()
	if a.client != nil {
		a.awaitServed(b, procs, ids, n)
		return
	}
	ring := sharding.NewRing(ShardRing, ids)
	var why string
	err := wait.PollUntilContextTimeout(b.Context(), 50*time.Millisecond, scaleStepTimeout, true, func(context.Context) (bool, error) {
		if err := exitedMember(procs); err != nil {
			return false, err
		}
		objs := a.rss.GetStore().List()
		wrong := 0
		for _, obj := range objs {
			m := obj.(*metav1.PartialObjectMetadata)
			key := m.Namespace + "/" + m.Name
			if m.Labels[sharding.Label(ShardRing)] != ring.Owner(key) || m.Labels[sharding.DrainLabel(ShardRing)] != "" ||
				m.Annotations[sharding.HolderAnnotation(ShardRing)] == "" {
				wrong++
			}
		}
		why = fmt.Sprintf("%d of %d ReplicaSets not where the ring over %v puts them", wrong, len(objs), ids)
		return wrong == 0 && len(objs) == n, nil
	})
	require.NoError(b, err, "waiting for the assignment: %s", why)
}

// awaitScalePods waits until want Pods exist, each labelled as its ReplicaSet.
func awaitScalePods(b *testing.B, a *assignments, procs map[string]*process, want int) {
	b.Helper()
	var why string
	err := wait.PollUntilContextTimeout(b.Context(), 100*time.Millisecond, scaleStepTimeout, true, func(context.Context) (bool, error) {
		if err := exitedMember(procs); err != nil {
			return false, err
		}
		owners := map[string]string{}
		for _, obj := range a.rss.GetStore().List() {
			m := obj.(*metav1.PartialObjectMetadata)
			owners[string(m.UID)] = m.Labels[sharding.Label(ShardRing)]
		}
		got := 0
		for _, obj := range a.pods.GetStore().List() {
			m := obj.(*metav1.PartialObjectMetadata)
			if ref := metav1.GetControllerOfNoCopy(m); ref != nil && m.DeletionTimestamp == nil &&
				m.Labels[sharding.Label(ShardRing)] == owners[string(ref.UID)] {
				got++
			}
		}
		why = fmt.Sprintf("%d of %d Pods", got, want)
		return got == want, nil
	})
	require.NoError(b, err, "waiting for the Pods: %s", why)
}

// awaitServed is await for a server-side ring: read from the member Leases every 50 ms.
func (a *assignments) awaitServed(b *testing.B, procs map[string]*process, ids []string, n int) {
	b.Helper()
	var why string
	err := wait.PollUntilContextTimeout(b.Context(), 50*time.Millisecond, scaleStepTimeout, true, func(ctx context.Context) (bool, error) {
		if err := exitedMember(procs); err != nil {
			return false, err
		}
		leases, err := a.client.CoordinationV1().Leases(a.ns).List(ctx, metav1.ListOptions{LabelSelector: sharding.RingLabel + "=" + ShardRing})
		if err != nil {
			return false, err
		}
		bySlot := map[int]string{}
		members := 0
		for _, l := range leases.Items {
			id, _ := strings.CutPrefix(l.Name, ShardRing+".")
			assigned, serving := l.Annotations[sharding.SlotsAnnotation(ShardRing)], l.Annotations[sharding.ServingAnnotation(ShardRing)]
			_, slots, err := sharding.ParseSlotRecord(serving)
			if err != nil {
				return false, err
			}
			if !slices.Contains(ids, id) {
				if len(slots) > 0 && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
					why = fmt.Sprintf("%s, not a member, serves %q", id, serving)
					return false, nil
				}
				continue
			}
			if assigned == "" || assigned != serving || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
				why = fmt.Sprintf("%s assigned %q, serving %q", id, assigned, serving)
				return false, nil
			}
			members++
			for _, slot := range slots {
				bySlot[slot] = id
			}
		}
		if members != len(ids) || len(bySlot) != sharding.Slots {
			why = fmt.Sprintf("%d of %d members serving, %d of %d slots served by %v", members, len(ids), len(bySlot), sharding.Slots, ids)
			return false, nil
		}
		a.bySlot = bySlot
		cached := len(a.rss.GetStore().ListKeys())
		why = fmt.Sprintf("%d of %d ReplicaSets cached", cached, n)
		return cached == n, nil
	})
	require.NoError(b, err, "waiting for the slots: %s", why)
}
