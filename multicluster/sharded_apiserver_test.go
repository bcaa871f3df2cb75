package multicluster_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/multicluster"
	"github.com/ctrlkit/ctrlkit/sharding"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// overlap watches that no cluster is reconciled, or engaged, by two
// replicas at once.
type overlap struct {
	mu        sync.Mutex
	inFlight  map[string]string // cluster → replica reconciling it now
	overlaps  atomic.Int64
	reconcile map[string]map[string]int // replica → cluster → reconciles
}

func (o *overlap) enter(replica, cluster string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if other, ok := o.inFlight[cluster]; ok && other != replica {
		o.overlaps.Add(1)
	}
	o.inFlight[cluster] = replica
	if o.reconcile[replica] == nil {
		o.reconcile[replica] = map[string]int{}
	}
	o.reconcile[replica][cluster]++
}

func (o *overlap) exit(replica, cluster string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.inFlight[cluster] == replica {
		delete(o.inFlight, cluster)
	}
}

type shardedReplica struct {
	name   string
	fleet  *multicluster.Fleet
	outage *testkit.Outage
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Three replicas share 300 clusters: a join, a graceful leave and a kill (a
// replica cut off from the hub) move clusters between them, and no cluster
// is ever engaged, nor reconciled, by two replicas at once.
func TestShardedFleetMovesClustersWithoutOverlap(t *testing.T) {
	hub := testkit.NewAPIServer(t)
	const n = 300
	conns := map[string]multicluster.Connection{}
	for i := range n {
		conns[fmt.Sprintf("c%02d", i)], _ = fake(t, configMap("default", "x"))
	}
	ov := &overlap{inFlight: map[string]string{}, reconcile: map[string]map[string]int{}}
	start := func(name string) *shardedReplica {
		r := &shardedReplica{name: name, outage: testkit.NewOutage(t, hub.Config())}
		client, err := kubernetes.NewForConfig(r.outage.Config())
		require.NoError(t, err)
		r.fleet, err = multicluster.New(multicluster.Options{Provider: multicluster.NewList(conns), Sharding: &multicluster.Sharding{
			Client: client,
			Config: sharding.Config{Ring: "fleet", Namespace: hub.Namespace(), Identity: name,
				LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 250 * time.Millisecond},
		}})
		require.NoError(t, err)
		rec := controller.ReconcilerFunc[multicluster.Key](func(ctx context.Context, k multicluster.Key) (controller.Result, error) {
			ov.enter(name, k.Cluster)
			defer ov.exit(name, k.Cluster)
			select { // a reconcile that takes a while, so overlaps would show
			case <-time.After(5 * time.Millisecond):
			case <-ctx.Done():
			}
			return controller.Result{RequeueAfter: 20 * time.Millisecond}, nil
		})
		c, err := multicluster.NewController(r.fleet, "sharded", rec, controller.Options[multicluster.Key]{Workers: 4})
		require.NoError(t, err)
		require.NoError(t, multicluster.Watch(r.fleet, c, multicluster.For[*corev1.ConfigMap](), controller.EnqueueObject))
		ctx, cancel := context.WithCancel(context.Background())
		r.cancel = cancel
		r.wg.Go(func() { assert.NoError(t, r.fleet.Run(ctx)) })
		r.wg.Go(func() { assert.NoError(t, c.Run(ctx)) })
		t.Cleanup(r.stop)
		return r
	}
	engagedBy := func(rs ...*shardedReplica) (map[string][]string, int) {
		by := map[string][]string{}
		total := 0
		for _, r := range rs {
			for _, c := range r.fleet.Clusters() {
				by[c] = append(by[c], r.name)
				total++
			}
		}
		return by, total
	}
	// A sampler: no cluster engaged by two replicas, at any sample.
	var all []*shardedReplica
	var allMu sync.Mutex
	sampled := atomic.Int64{}
	stopSampling := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			select {
			case <-stopSampling:
				return
			case <-time.After(2 * time.Millisecond):
			}
			allMu.Lock()
			by, _ := engagedBy(all...)
			allMu.Unlock()
			for c, rs := range by {
				if len(rs) > 1 {
					t.Errorf("cluster %s engaged by %v at once", c, rs)
				}
			}
			sampled.Add(1)
		}
	})
	defer func() { close(stopSampling); sampler.Wait() }()
	add := func(r *shardedReplica) { allMu.Lock(); all = append(all, r); allMu.Unlock() }
	covered := func(rs ...*shardedReplica) func() bool {
		return func() bool {
			by, total := engagedBy(rs...)
			if len(by) != n || total != n {
				return false
			}
			for _, r := range rs {
				if len(r.fleet.Clusters()) == 0 {
					return false
				}
			}
			return true
		}
	}

	r0, r1 := start("r0"), start("r1")
	add(r0)
	add(r1)
	require.Eventually(t, covered(r0, r1), time.Minute, 10*time.Millisecond, "two replicas share the clusters")

	began := time.Now()
	r2 := start("r2")
	add(r2)
	require.Eventually(t, covered(r0, r1, r2), time.Minute, 10*time.Millisecond, "a third joins and takes its share")
	t.Logf("join: shares settled in %v", time.Since(began).Round(time.Millisecond))

	began = time.Now()
	r1.stop() // a graceful leave: its clusters move at once
	require.Eventually(t, covered(r0, r2), time.Minute, 10*time.Millisecond, "the leaver's clusters move")
	t.Logf("leave: its clusters moved in %v", time.Since(began).Round(time.Millisecond))

	began = time.Now()
	r2.outage.Cut() // a kill, as the hub sees it: r2 cannot renew
	require.Eventually(t, func() bool { return len(r2.fleet.Clusters()) == 0 }, time.Minute, 10*time.Millisecond,
		"a replica cut off from the hub disengages every cluster")
	require.Eventually(t, covered(r0), time.Minute, 10*time.Millisecond, "the survivor takes them after the Lease expired")
	t.Logf("kill: the survivor held every cluster %v after the cut (LeaseDuration 3s)", time.Since(began).Round(time.Millisecond))
	r2.outage.Restore()
	require.Eventually(t, covered(r0, r2), time.Minute, 10*time.Millisecond, "the cut-off replica joins again")

	assert.Zero(t, ov.overlaps.Load(), "no cluster was reconciled by two replicas at once")
	assert.Positive(t, sampled.Load())
	ov.mu.Lock()
	defer ov.mu.Unlock()
	for _, r := range []string{"r0", "r1", "r2"} {
		assert.NotEmpty(t, ov.reconcile[r], "replica %s reconciled", r)
	}
}

func (r *shardedReplica) stop() {
	r.cancel()
	r.wg.Wait()
}
