package sharding_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	coordv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/metadata"

	"github.com/ctrlkit/ctrlkit/internal/netfault"
	"github.com/ctrlkit/ctrlkit/sharding"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// The randomized split-brain test: a ring of 3 to 5 members on the fake
// cluster, each behind its own faulty network (latency, lost replies,
// 5xx and Conflict on writes, partitions of its Lease requests and label
// writes), crashing without releasing its Lease, restarting with the same
// identity, leaving, while objects come and go. Once the faults stop, the
// ring must settle with every object labelled for its member and
// reconciled by it, and no key may ever have been reconciled by two
// members at once.
//
// The fault schedule comes from one seed, logged; the goroutines'
// interleaving does not, so a seed reproduces the schedule, not every
// step.
const (
	// envSeed runs the one seed given (a failure's, from its log).
	envSeed = "CTRLKIT_SHARD_SEED"
	// envSoak runs that many seeds, each with a longer chaos phase.
	envSoak = "CTRLKIT_SHARD_SOAK"
)

// Lease timings of the chaos test: short, like the ring test's, but with a
// wider safety margin (LeaseDuration − RenewDeadline − RetryPeriod = 1s),
// because injected latency and a loaded machine under -race eat into it.
const (
	chaosLeaseDuration = 2500 * time.Millisecond
	chaosRenewDeadline = 1200 * time.Millisecond
	chaosRetryPeriod   = 300 * time.Millisecond
)

func TestSplitBrainOnFakeCluster(t *testing.T) {
	seeds := []uint64{rand.Uint64() % 1_000_000, rand.Uint64() % 1_000_000}
	chaos := 5 * time.Second
	if s := os.Getenv(envSoak); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "%s must be a number of seeds", envSoak)
		seeds = seeds[:0]
		for range n {
			seeds = append(seeds, rand.Uint64()%1_000_000)
		}
		chaos = 20 * time.Second
	}
	if s := os.Getenv(envSeed); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "%s must be a seed", envSeed)
		seeds = []uint64{seed}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runChaos(t, seed, chaos) })
	}
}

// netFaults is one member process's network to the API server. Its
// Lease requests and label writes go through it; its informers do not (a
// partition here is of the writes that matter to the protocol).
type netFaults struct {
	stats *faultStats

	mu         sync.Mutex
	rnd        *rand.Rand
	maxLatency time.Duration // each of request and reply waits uniformly up to it
	lostReply  float64       // a write applied, its reply lost
	failWrite  float64       // a write refused before it is applied: 5xx or Conflict
	cutUntil   time.Time     // partitioned until then
	stallUntil time.Time     // Lease watch events held back until then
	crashed    bool          // every request fails: the process is gone
}

type faultStats struct {
	lost, failed, cut atomic.Int64
}

var errCut = errors.New("injected partition: connection refused")

func (f *netFaults) delay() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.maxLatency <= 0 {
		return 0
	}
	return time.Duration(f.rnd.Int64N(int64(f.maxLatency) + 1))
}

func (f *netFaults) cut(until time.Time) {
	f.mu.Lock()
	f.cutUntil = until
	f.mu.Unlock()
}

func (f *netFaults) crash() {
	f.mu.Lock()
	f.crashed = true
	f.mu.Unlock()
}

func (f *netFaults) heal() {
	f.mu.Lock()
	f.maxLatency, f.lostReply, f.failWrite, f.cutUntil, f.stallUntil = 0, 0, 0, time.Time{}, time.Time{}
	f.mu.Unlock()
}

// failCreate decides whether a child creation fails (a 5xx), with the
// write failure probability.
func (f *netFaults) failCreate() error {
	f.mu.Lock()
	fail := f.rnd.Float64() < f.failWrite
	f.mu.Unlock()
	if fail {
		f.stats.failed.Add(1)
		return apierrors.NewServiceUnavailable("injected write failure")
	}
	return nil
}

// through runs one request through f: a request delay, a partition or an
// injected write failure, the request, a reply delay, maybe a lost reply.
func through[T any](ctx context.Context, f *netFaults, write bool, gr schema.GroupResource, name string, do func() (T, error)) (T, error) {
	var zero T
	if err := netfault.Sleep(ctx, f.delay()); err != nil {
		return zero, err
	}
	f.mu.Lock()
	cut := f.crashed || time.Now().Before(f.cutUntil)
	var fail, conflict, lost bool
	if write {
		fail = f.rnd.Float64() < f.failWrite
		conflict = fail && f.rnd.IntN(2) == 0
		lost = !fail && f.rnd.Float64() < f.lostReply
	}
	f.mu.Unlock()
	switch {
	case cut:
		f.stats.cut.Add(1)
		return zero, errCut
	case conflict:
		f.stats.failed.Add(1)
		return zero, apierrors.NewConflict(gr, name, errors.New("injected conflict"))
	case fail:
		f.stats.failed.Add(1)
		return zero, apierrors.NewInternalError(errors.New("injected write failure"))
	}
	v, lostReply, err := netfault.Reply(ctx, f.delay, lost, do)
	if lostReply {
		f.stats.lost.Add(1)
	}
	return v, err
}

// faultyClient is a clientset whose Lease requests go through f.
type faultyClient struct {
	kubernetes.Interface
	f *netFaults
}

func (c faultyClient) CoordinationV1() coordv1client.CoordinationV1Interface {
	return faultyCoordination{CoordinationV1Interface: c.Interface.CoordinationV1(), f: c.f}
}

// IsWatchListSemanticsUnSupported forwards the fake cluster's answer.
func (c faultyClient) IsWatchListSemanticsUnSupported() bool {
	u, ok := c.Interface.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && u.IsWatchListSemanticsUnSupported()
}

type faultyCoordination struct {
	coordv1client.CoordinationV1Interface
	f *netFaults
}

func (c faultyCoordination) Leases(ns string) coordv1client.LeaseInterface {
	return faultyLeases{LeaseInterface: c.CoordinationV1Interface.Leases(ns), f: c.f}
}

type faultyLeases struct {
	coordv1client.LeaseInterface
	f *netFaults
}

var leaseResource = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

func (l faultyLeases) Get(ctx context.Context, name string, o metav1.GetOptions) (*coordinationv1.Lease, error) {
	return through(ctx, l.f, false, leaseResource, name, func() (*coordinationv1.Lease, error) { return l.LeaseInterface.Get(ctx, name, o) })
}

func (l faultyLeases) Create(ctx context.Context, lease *coordinationv1.Lease, o metav1.CreateOptions) (*coordinationv1.Lease, error) {
	return through(ctx, l.f, true, leaseResource, lease.Name, func() (*coordinationv1.Lease, error) { return l.LeaseInterface.Create(ctx, lease, o) })
}

func (l faultyLeases) Update(ctx context.Context, lease *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	return through(ctx, l.f, true, leaseResource, lease.Name, func() (*coordinationv1.Lease, error) { return l.LeaseInterface.Update(ctx, lease, o) })
}

// Watch holds the watch's events back while f's Lease watches stall: a
// slow API server, or a watch cache falling behind.
func (l faultyLeases) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := l.LeaseInterface.Watch(ctx, o)
	if err != nil {
		return nil, err
	}
	sw := &stallingWatch{in: w, out: make(chan watch.Event), done: make(chan struct{}), f: l.f}
	go sw.relay()
	return sw, nil
}

type stallingWatch struct {
	in       watch.Interface
	out      chan watch.Event
	done     chan struct{}
	stopOnce sync.Once
	f        *netFaults
}

func (w *stallingWatch) relay() {
	defer close(w.out)
	for ev := range w.in.ResultChan() {
		for {
			w.f.mu.Lock()
			left := time.Until(w.f.stallUntil)
			w.f.mu.Unlock()
			if left <= 0 {
				break
			}
			t := time.NewTimer(min(left, 50*time.Millisecond))
			select {
			case <-w.done:
				t.Stop()
				return
			case <-t.C:
			}
		}
		select {
		case w.out <- ev:
		case <-w.done:
			return
		}
	}
}

func (w *stallingWatch) Stop() {
	w.stopOnce.Do(func() {
		close(w.done)
		w.in.Stop()
	})
}

func (w *stallingWatch) ResultChan() <-chan watch.Event { return w.out }

func (l faultyLeases) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, o metav1.PatchOptions, sub ...string) (*coordinationv1.Lease, error) {
	return through(ctx, l.f, true, leaseResource, name, func() (*coordinationv1.Lease, error) {
		return l.LeaseInterface.Patch(ctx, name, pt, data, o, sub...)
	})
}

// faultyMetadata is a metadata client whose patches (the sharder's labels,
// the dispatcher's acknowledgements) go through f; lists and watches do not.
type faultyMetadata struct {
	metadata.Interface
	f *netFaults
}

func (m faultyMetadata) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	return faultyGetter{Getter: m.Interface.Resource(gvr), gr: gvr.GroupResource(), f: m.f}
}

// IsWatchListSemanticsUnSupported: the fake cluster's watches do not stream
// the initial list.
func (m faultyMetadata) IsWatchListSemanticsUnSupported() bool { return true }

type faultyGetter struct {
	metadata.Getter
	gr schema.GroupResource
	f  *netFaults
}

func (g faultyGetter) Namespace(ns string) metadata.ResourceInterface {
	return faultyResource{ResourceInterface: g.Getter.Namespace(ns), gr: g.gr, f: g.f}
}

func (g faultyGetter) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, o metav1.PatchOptions, sub ...string) (*metav1.PartialObjectMetadata, error) {
	return through(ctx, g.f, true, g.gr, name, func() (*metav1.PartialObjectMetadata, error) {
		return g.Getter.Patch(ctx, name, pt, data, o, sub...)
	})
}

type faultyResource struct {
	metadata.ResourceInterface
	gr schema.GroupResource
	f  *netFaults
}

func (r faultyResource) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, o metav1.PatchOptions, sub ...string) (*metav1.PartialObjectMetadata, error) {
	return through(ctx, r.f, true, r.gr, name, func() (*metav1.PartialObjectMetadata, error) {
		return r.ResourceInterface.Patch(ctx, name, pt, data, o, sub...)
	})
}

// chaos drives one seed's run: the member processes of a ring and the
// faults of each.
type chaos struct {
	t    *testing.T
	r    *ring
	rnd  *rand.Rand // the schedule's; used by the test goroutine only
	base metadata.Interface

	// The fault levels of this seed.
	maxLatency           time.Duration
	lostReply, failWrite float64

	stats faultStats
	calm  atomic.Bool // faults stopped: new processes get none

	mu     sync.Mutex
	faults map[string]*netFaults // the current process of each identity
	poked  map[string][]string   // key -> members that reconciled it after the poke
	poke   string                // the poke annotation's value being looked for

	// Counts of what the schedule did, for the log.
	partitions, stalls, crashes, leaves, restarts, replaced, created, deleted int
	exits                                                                     map[string]int // why processes ended on their own
}

const pokeAnnotation = "test.ctrlkit.dev/poke"

// clients gives a new process of id its own faulty network.
func (c *chaos) clients(id string) (kubernetes.Interface, metadata.Interface) {
	f := &netFaults{stats: &c.stats, rnd: rand.New(rand.NewPCG(c.rnd.Uint64(), c.rnd.Uint64()))}
	if !c.calm.Load() {
		f.maxLatency, f.lostReply, f.failWrite = c.maxLatency, c.lostReply, c.failWrite
	}
	c.mu.Lock()
	c.faults[id] = f
	c.mu.Unlock()
	return faultyClient{Interface: c.r.env.Client(), f: f}, faultyMetadata{Interface: c.base, f: f}
}

func (c *chaos) faultsOf(id string) *netFaults {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.faults[id]
}

func (c *chaos) beforeCreate(id string) error {
	if f := c.faultsOf(id); f != nil {
		return f.failCreate()
	}
	return nil
}

func (c *chaos) reconciled(id string, cm *corev1.ConfigMap) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.poke != "" && cm.Annotations[pokeAnnotation] == c.poke {
		k := cm.Namespace + "/" + cm.Name
		if !slices.Contains(c.poked[k], id) {
			c.poked[k] = append(c.poked[k], id)
		}
	}
}

// running is the identities with a process now.
func (c *chaos) running() []string {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	var ids []string
	for id := range c.r.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (c *chaos) process(id string) *testMember {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	return c.r.members[id]
}

// reap takes the processes that ended on their own (membership lost while
// partitioned) off the ring, and returns their identities and why each
// ended.
func (c *chaos) reap() (ended, whys []string) {
	for _, id := range c.running() {
		tm := c.process(id)
		select {
		case <-tm.left:
		default:
			continue
		}
		why := "nil"
		switch {
		case errors.Is(tm.runErr, sharding.ErrMembershipLost):
			why = "membership lost"
		case errors.As(tm.runErr, new(*sharding.DuplicateIdentityError)):
			why = "duplicate identity"
		case tm.runErr != nil:
			why = tm.runErr.Error()
		}
		c.exits[why]++
		c.r.stop(id)
		ended, whys = append(ended, id), append(whys, why)
	}
	return ended, whys
}

// replace starts a new process of id while the old one, a member cut off
// until until, still runs: as when a node is partitioned and the process is
// started again elsewhere. The old one stops once it cannot renew; the new
// one waits its Lease out. (An old process that has not joined would
// contend with the new one for ever: a true duplicate, which the new one
// reports; not what this step is for.)
func (c *chaos) replace(id string, until time.Time) {
	old := c.process(id)
	if !old.member.IsMember() {
		return
	}
	c.faultsOf(id).cut(until)
	c.r.mu.Lock()
	delete(c.r.members, id)
	c.r.mu.Unlock()
	c.t.Cleanup(func() {
		old.cancel()
		<-old.done
	})
	c.r.start(id)
	c.replaced++
}

// crash ends id's process without releasing anything: its requests fail
// from now on, as a dead process's would never be made.
func (c *chaos) crash(id string) {
	c.faultsOf(id).crash()
	c.r.stop(id)
}

func runChaos(t *testing.T, seed uint64, phase time.Duration) {
	rnd := rand.New(rand.NewPCG(seed, 0x5eed))
	t.Logf("seed %d: rerun this schedule with %s=%d", seed, envSeed, seed)
	env := testkit.NewFake(t)
	base := env.Metadata()
	n := 3 + rnd.IntN(3)
	r := newRing(t, env.Env, base, 20+rnd.IntN(21), true)
	r.leaseDuration, r.renewDeadline, r.retryPeriod = chaosLeaseDuration, chaosRenewDeadline, chaosRetryPeriod
	c := &chaos{t: t, r: r, rnd: rnd, base: base,
		maxLatency: time.Duration(5+rnd.IntN(36)) * time.Millisecond,
		lostReply:  0.05 + 0.2*rnd.Float64(), failWrite: 0.05 + 0.15*rnd.Float64(),
		faults: map[string]*netFaults{}, poked: map[string][]string{}, exits: map[string]int{}}
	r.clients, r.onReconcile, r.beforeCreate = c.clients, c.reconciled, c.beforeCreate
	t.Logf("%d members, %d objects; latency up to %v, %.0f%% replies lost, %.0f%% writes failed",
		n, len(r.keys), c.maxLatency, 100*c.lostReply, 100*c.failWrite)

	ids := make([]string, n)
	for i := range ids {
		ids[i] = string(rune('a' + i))
	}
	// All but the last start now; the last joins during the chaos.
	start := time.Now()
	restartAt := map[string]time.Time{ids[n-1]: start.Add(time.Duration(rnd.Int64N(int64(phase))))}
	for _, id := range ids[:n-1] {
		r.start(id)
	}
	gone := map[string]bool{} // left for good
	created := 0
	pick := func(from []string) string { return from[rnd.IntN(len(from))] }
	lease := chaosLeaseDuration

	for time.Since(start) < phase {
		now := time.Now()
		ended, _ := c.reap()
		for _, id := range ended {
			at := now
			if f := c.faultsOf(id); f != nil {
				f.mu.Lock()
				at = f.cutUntil
				f.mu.Unlock()
			}
			restartAt[id] = maxTime(now, at).Add(time.Duration(rnd.Int64N(int64(lease))))
		}
		for id, at := range restartAt {
			if now.After(at) {
				delete(restartAt, id)
				r.start(id)
				c.restarts++
			}
		}
		run := c.running()
		switch a := rnd.IntN(100); {
		case len(run) < 2:
			// Keep someone to hand keys to.
		case a < 25:
			id := pick(run)
			d := time.Duration(float64(lease) * (0.1 + 0.8*rnd.Float64())) // shorter than LeaseDuration
			if rnd.IntN(2) == 0 {
				d = time.Duration(float64(lease) * (1.1 + 1.4*rnd.Float64())) // longer
			}
			c.faultsOf(id).cut(now.Add(d))
			c.partitions++
		case a < 37:
			id := pick(run)
			c.crash(id)
			c.crashes++
			restartAt[id] = time.Now().Add(time.Duration(rnd.Int64N(int64(2 * lease))))
		case a < 45:
			id := pick(run)
			r.stop(id)
			c.leaves++
			if rnd.IntN(3) == 0 && len(gone) == 0 {
				gone[id] = true
			} else {
				restartAt[id] = time.Now().Add(time.Duration(rnd.Int64N(int64(2 * lease))))
			}
		case a < 50:
			// The sharder's Lease watch is the one whose delay matters.
			id := pick(run)
			for _, r := range run {
				if c.process(r).sharder.IsLeader() {
					id = r
				}
			}
			f := c.faultsOf(id)
			f.mu.Lock()
			f.stallUntil = now.Add(time.Duration(float64(lease) * (0.5 + 1.5*rnd.Float64())))
			f.mu.Unlock()
			c.stalls++
		case a < 53:
			c.replace(pick(run), now.Add(time.Duration(float64(lease)*(1.5+rnd.Float64()))))
		case a < 78:
			c.churn(&created)
		}
		select {
		case <-time.After(time.Duration(100+rnd.IntN(500)) * time.Millisecond):
		case <-env.Context().Done():
			t.Fatal("test ended")
		}
	}

	// Faults stop; the processes down come back (except those that left).
	c.calm.Store(true)
	c.mu.Lock()
	for _, f := range c.faults {
		f.heal()
	}
	c.mu.Unlock()
	for id := range restartAt {
		r.start(id)
		c.restarts++
	}
	healed := time.Now()
	settled := c.settle(time.Minute)
	t.Logf("chaos of %v: %d partitions, %d watch stalls, %d crashes, %d leaves, %d replaced while running, %d restarts, %d objects created, %d deleted; "+
		"%d replies lost, %d writes failed, %d requests cut; processes ended on their own: %v",
		phase, c.partitions, c.stalls, c.crashes, c.leaves, c.replaced, c.restarts, c.created, c.deleted,
		c.stats.lost.Load(), c.stats.failed.Load(), c.stats.cut.Load(), c.exits)
	t.Logf("ring of %v settled %v after the faults stopped", settled, time.Since(healed))

	// Every key is live at its owner: a change to each object is reconciled
	// by the member the ring gives it, and by no other.
	c.mu.Lock()
	c.poke = "1"
	c.mu.Unlock()
	list, err := env.Client().CoreV1().ConfigMaps(env.Namespace()).List(env.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	for _, cm := range list.Items {
		_, err := env.Client().CoreV1().ConfigMaps(env.Namespace()).Patch(env.Context(), cm.Name, types.MergePatchType,
			fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"1"}}}`, pokeAnnotation), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	want := sharding.NewRing(ringName, settled)
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, cm := range list.Items {
			k := cm.Namespace + "/" + cm.Name
			if !slices.Contains(c.poked[k], want.Owner(k)) {
				return false
			}
		}
		return true
	}, 20*time.Second, 10*time.Millisecond, "every object's change reconciled by its owner")
	c.mu.Lock()
	for _, cm := range list.Items {
		k := cm.Namespace + "/" + cm.Name
		require.Equal(t, []string{want.Owner(k)}, c.poked[k], "members that reconciled %s after the poke", k)
	}
	c.mu.Unlock()
	require.Empty(t, r.unsettled(want), "the ring moved after it settled")
	r.checker.check(t)
	require.Zero(t, r.missed.Load(), "children a new owner did not see in its cache")
}

// churn creates a few objects and deletes a few (each with its child).
func (c *chaos) churn(created *int) {
	env := c.r.env
	for range c.rnd.IntN(3) {
		name := fmt.Sprintf("new-%03d", *created)
		*created++
		_, err := env.Client().CoreV1().ConfigMaps(env.Namespace()).Create(env.Context(),
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		require.NoError(c.t, err)
		c.created++
	}
	list, err := env.Client().CoreV1().ConfigMaps(env.Namespace()).List(env.Context(), metav1.ListOptions{})
	require.NoError(c.t, err)
	for range c.rnd.IntN(2) {
		if len(list.Items) < 10 {
			break
		}
		cm := list.Items[c.rnd.IntN(len(list.Items))]
		err := env.Client().CoreV1().ConfigMaps(env.Namespace()).Delete(env.Context(), cm.Name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		require.NoError(c.t, err)
		// No garbage collector in the fake cluster: the test deletes the
		// child as it would.
		err = env.Client().CoreV1().Secrets(env.Namespace()).Delete(env.Context(), cm.Name+"-child", metav1.DeleteOptions{})
		if !apierrors.IsNotFound(err) {
			require.NoError(c.t, err)
		}
		c.deleted++
	}
}

// settle waits, restarting the processes that end on their own, until the
// ring of the running members is settled (ring.unsettled), and returns
// those members.
func (c *chaos) settle(within time.Duration) []string {
	c.t.Helper()
	deadline := time.Now().Add(within)
	var why string
	for time.Now().Before(deadline) {
		ended, whys := c.reap()
		for i, id := range ended {
			c.t.Logf("member %s ended after the faults stopped (%s); restarting it", id, whys[i])
			c.r.start(id)
			c.restarts++
		}
		run := c.running()
		why = c.r.unsettled(sharding.NewRing(ringName, run))
		if why == "" {
			return run
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-c.r.env.Context().Done():
			c.t.Fatal("test ended")
		}
	}
	c.t.Fatalf("ring of %v not settled %v after the faults stopped: %s", c.running(), within, why)
	return nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
