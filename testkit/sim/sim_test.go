package sim_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/testkit/sim"
	"github.com/ctrlkit/ctrlkit/testkit/sim/internal/corpus"
)

// Replay is exact: a seed gives the same trace (every write and every fault, in order) and the
// same findings in every run, for every fault, ten runs of ten seeds. The virtual times are
// left out: client-go's jittered backoffs (a reflector's relist) draw from a source the
// simulation does not seed, which moves them by a poll or so.
func untimed(trace []string) []string {
	out := make([]string, len(trace))
	for i, l := range trace {
		l = strings.TrimSpace(l)
		_, out[i], _ = strings.Cut(l, " ")
	}
	return out
}

// requireReplays runs s with seed under f runs times and fails unless every run gives the
// first's trace (untimed) and findings.
func requireReplays(t *testing.T, s sim.Scenario, seed uint64, f sim.Fault, runs int) {
	t.Helper()
	first := sim.Run(t, s, seed, f)
	for range runs - 1 {
		again := sim.Run(t, s, seed, f)
		require.Equal(t, untimed(first.Trace), untimed(again.Trace), "seed %d: the trace differs between runs", seed)
		require.Equal(t, first.Problems, again.Problems, "seed %d", seed)
	}
}

// Replay is exact; see untimed.
func TestReplayIsExact(t *testing.T) {
	bugs := corpus.All()
	for _, f := range []sim.Fault{sim.Crash(), sim.StaleRestart(30 * time.Second), sim.MergeEvents(30 * time.Second),
		sim.Relist(30 * time.Second), sim.APIErrors(30), sim.Drift(), sim.Edit()} {
		t.Run(f.String(), func(t *testing.T) {
			for seed := uint64(1); seed <= 10; seed++ {
				requireReplays(t, bugs[int(seed)%len(bugs)].Scenario(false), seed, f, 10)
			}
		})
	}
}

// Each fault strikes, and says so in the trace.
func TestEveryFaultStrikes(t *testing.T) {
	s := corpus.All()[2].Scenario(true) // a ReplicaSet-like controller: creates, deletes, several resources
	for f, says := range map[sim.Fault]string{
		sim.Crash():                        "crashes after its write",
		sim.StaleRestart(30 * time.Second): "lagging at the world's write",
		sim.MergeEvents(30 * time.Second):  "delivered merged",
		sim.Relist(30 * time.Second):       "end with 410 Gone",
		sim.APIErrors(50):                  "",
		sim.Drift():                        "another actor deletes",
	} {
		t.Run(f.String(), func(t *testing.T) {
			r := sim.Run(t, s, 3, f)
			assert.Empty(t, r.Problems, "the fixed controller passes:\n%s", strings.Join(r.Trace, "\n"))
			assert.False(t, slices.ContainsFunc(r.Trace, func(l string) bool { return strings.Contains(l, "did not strike") }),
				"the fault struck:\n%s", strings.Join(r.Trace, "\n"))
			if says != "" {
				assert.True(t, slices.ContainsFunc(r.Trace, func(l string) bool { return strings.Contains(l, says) }),
					"the trace says %q:\n%s", says, strings.Join(r.Trace, "\n"))
			}
		})
	}
}

// The example's scenario holds under every fault (a level-based controller with fixed names).
func TestExampleScenarioUnderEveryFault(t *testing.T) {
	sim.Check(t, mirrorScenario(), sim.Crash(), sim.StaleRestart(30*time.Second), sim.MergeEvents(30*time.Second),
		sim.Relist(30*time.Second), sim.APIErrors(20), sim.Drift(), sim.Edit())
}

// Edit changes a field the controller wrote, and the example's controller puts it back.
func TestEditStrikes(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		r := sim.Run(t, mirrorScenario(), seed, sim.Edit())
		assert.Empty(t, r.Problems, "seed %d:\n%s", seed, strings.Join(r.Trace, "\n"))
		assert.True(t, slices.ContainsFunc(r.Trace, func(l string) bool { return strings.Contains(l, "another actor sets") }),
			"seed %d: the trace says what was edited:\n%s", seed, strings.Join(r.Trace, "\n"))
	}
}

// With two replicas the leader's faults hand the work to another process (the standby, or the
// crashed leader's restart: client-go's election jitter picks), and the fixed controller
// converges with no write the reference run did not make.
func TestFailover(t *testing.T) {
	s := corpus.All()[2].Scenario(true)
	s.Replicas = 2
	for f, says := range map[sim.Fault]string{
		sim.Crash():                      "crashes after its write",
		sim.LeaseStall(30 * time.Second): "Lease requests fail",
		sim.Partition(30 * time.Second):  "is partitioned",
	} {
		t.Run(f.String(), func(t *testing.T) {
			for seed := uint64(1); seed <= 3; seed++ {
				r := sim.Run(t, s, seed, f)
				trace := strings.Join(r.Trace, "\n")
				assert.Empty(t, r.Problems, "seed %d:\n%s", seed, trace)
				assert.Contains(t, trace, says, "seed %d", seed)
				assert.Regexp(t, `process [23]: leads`, trace, "seed %d: another process took over", seed)
			}
		})
	}
}

// Replay of a Lease fault is exact too, untimed: the standby is the only candidate while the
// leader's Lease requests fail, whatever client-go's election jitter draws.
func TestReplayOfAFailoverIsExact(t *testing.T) {
	s := corpus.All()[2].Scenario(true)
	s.Replicas = 2
	for _, f := range []sim.Fault{sim.LeaseStall(30 * time.Second), sim.Partition(30 * time.Second)} {
		t.Run(f.String(), func(t *testing.T) {
			for seed := uint64(1); seed <= 5; seed++ {
				requireReplays(t, s, seed, f, 5)
			}
		})
	}
}

// NoActionOnStaleCache reports the first write a process makes while its cache lags; without
// it the same run passes the other oracles.
func TestNoActionOnStaleCache(t *testing.T) {
	s := corpus.All()[2].Scenario(true)
	s.NoActionOnStaleCache = true
	r := sim.Explore(t, s, sim.StaleRestart(30*time.Second), 50)
	require.NotNil(t, r, "a restart onto a lagging cache, then a write before it caught up, within 50 seeds")
	assert.True(t, slices.ContainsFunc(r.Problems, func(p string) bool { return strings.Contains(p, "acted while its cache lags") }),
		"%s", strings.Join(r.Problems, "\n"))
	s.NoActionOnStaleCache = false
	assert.Empty(t, sim.Run(t, s, r.Seed, sim.StaleRestart(30*time.Second)).Problems, "the fixed controller passes the other oracles")
}

// StaleBound narrows NoActionOnStaleCache to writes made on a cache that has missed a write for
// longer than the bound: a bound longer than the run reports nothing, a tiny one the first write
// on a cache behind the world.
func TestStaleBound(t *testing.T) {
	s := corpus.All()[2].Scenario(true)
	s.NoActionOnStaleCache = true
	f := sim.StaleRestart(30 * time.Second)
	r := sim.Explore(t, s, f, 50)
	require.NotNil(t, r)
	s.StaleBound = time.Hour
	assert.Empty(t, sim.Run(t, s, r.Seed, f).Problems, "no write on a cache that missed a write for an hour")
	s.StaleBound = time.Nanosecond
	r = sim.Explore(t, s, f, 50)
	require.NotNil(t, r, "a write on a cache that has missed one, within 50 seeds")
	assert.True(t, slices.ContainsFunc(r.Problems, func(p string) bool {
		return strings.Contains(p, "acted on a cache that had missed a write for") && strings.Contains(p, "(bound 1ns)")
	}), "%s", strings.Join(r.Problems, "\n"))
}

// The world's garbage collector deletes what lost its owners, finishes a foreground deletion
// once the dependents are gone and an orphaning one once they no longer name the owner, and
// leaves a cluster-scoped object that names a namespaced owner alone.
func TestGarbageCollector(t *testing.T) {
	cm := func(name string, owners ...*corev1.ConfigMap) *corev1.ConfigMap {
		c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
		for _, o := range owners {
			c.OwnerReferences = append(c.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: o.Name, UID: o.UID})
		}
		return c
	}
	create := func(ctx context.Context, u *sim.User, c *corev1.ConfigMap) (*corev1.ConfigMap, error) {
		return u.Client.CoreV1().ConfigMaps("default").Create(ctx, c, metav1.CreateOptions{})
	}
	del := func(name string, p metav1.DeletionPropagation) sim.Step {
		return sim.Step{Name: "delete " + name, Do: func(ctx context.Context, u *sim.User) error {
			return u.Client.CoreV1().ConfigMaps("default").Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &p})
		}}
	}
	s := sim.Scenario{
		GarbageCollector: true,
		Start:            func(*sim.Process) error { return nil },
		Workload: []sim.Step{{Name: "owners and dependents", Do: func(ctx context.Context, u *sim.User) error {
			for _, owner := range []string{"bg", "fg", "orphan"} {
				o, err := create(ctx, u, cm(owner))
				if err != nil {
					return err
				}
				if _, err := create(ctx, u, cm(owner+"-child", o)); err != nil {
					return err
				}
			}
			keeper, err := create(ctx, u, cm("keeper"))
			if err != nil {
				return err
			}
			_, err = u.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cluster-scoped",
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: keeper.Name, UID: keeper.UID}}}}, metav1.CreateOptions{})
			return err
		}}, del("bg", metav1.DeletePropagationBackground), del("fg", metav1.DeletePropagationForeground), del("orphan", metav1.DeletePropagationOrphan)},
		Invariants: []sim.Invariant{{Name: "what is left", Check: func(ctx context.Context, u *sim.User) error {
			list, err := u.Client.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			var names []string
			for _, c := range list.Items {
				names = append(names, fmt.Sprintf("%s%v", c.Name, len(c.OwnerReferences)))
			}
			if got := strings.Join(names, ","); got != "keeper0,orphan-child0" {
				return fmt.Errorf("ConfigMaps left (name, owner references): %s, want keeper0,orphan-child0", got)
			}
			_, err = u.Client.CoreV1().Namespaces().Get(ctx, "cluster-scoped", metav1.GetOptions{})
			return err // a cluster-scoped object naming a namespaced owner: unresolvable, kept
		}}},
	}
	r := sim.Run(t, s, 1)
	assert.Empty(t, r.Problems, "%s", strings.Join(r.Trace, "\n"))
	assert.Contains(t, strings.Join(r.Trace, "\n"), "garbage collector: delete configmaps default/bg-child")
}
