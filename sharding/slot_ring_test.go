package sharding_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/sharding"
	"github.com/ctrlkit/ctrlkit/testkit"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// slotRing runs members of one server-side ring in this process, each with
// its own ShardSet-scoped factory, controller, keeper, dispatcher, member
// Lease and sharder candidate.
type slotRing struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	// members is the members' client for their Leases (and their sharder
	// candidates'): client, or one with write faults.
	members kubernetes.Interface
	ns      string
	checker *overlapChecker
	keys    []string
	// hash is the ring's HashField; under HashNamespace the objects are
	// spread over many namespaces and the members watch them all.
	hash sharding.HashField

	mu      sync.Mutex
	running map[string]*slotMember
}

type slotMember struct {
	cms    informer.Informer[*corev1.ConfigMap]
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

func newSlotRing(t *testing.T, ctx context.Context, client kubernetes.Interface, ns string, objects int) *slotRing {
	r := &slotRing{t: t, ctx: ctx, client: client, members: client, ns: ns, checker: newOverlapChecker(), running: map[string]*slotMember{}}
	for i := range objects {
		name := fmt.Sprintf("cm-%03d", i)
		_, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
		r.keys = append(r.keys, ns+"/"+name)
	}
	return r
}

// newNamespaceSlotRing is a ring hashing namespaces, over perNS objects in
// each of namespaces; its Leases live in leaseNS.
func newNamespaceSlotRing(t *testing.T, ctx context.Context, client kubernetes.Interface, leaseNS string, namespaces []string, perNS int) *slotRing {
	r := newSlotRing(t, ctx, client, leaseNS, 0)
	r.hash = sharding.HashNamespace
	for _, ns := range namespaces {
		for i := range perNS {
			name := fmt.Sprintf("cm-%d", i)
			_, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, metav1.CreateOptions{})
			require.NoError(t, err)
			r.keys = append(r.keys, ns+"/"+name)
		}
	}
	return r
}

func (r *slotRing) start(id string) { r.startWith(id, r.members) }

// startWith starts member id with client for its Leases (the objects are
// listed and watched with the ring's client).
func (r *slotRing) startWith(id string, client kubernetes.Interface) {
	t := r.t
	cfg := sharding.Config{Ring: ringName, Namespace: r.ns, Identity: id, Mode: sharding.ModeServer, HashField: r.hash,
		LeaseDuration: testLeaseDuration, RenewDeadline: testRenewDeadline, RetryPeriod: testRetryPeriod}
	m, err := sharding.NewMember(client, cfg, sharding.MemberOptions{})
	require.NoError(t, err)
	objNS := r.ns // the objects' namespace, "" for all
	if r.hash == sharding.HashNamespace {
		objNS = ""
	}
	sh, err := sharding.NewSharder(client, nil, cfg, sharding.SharderOptions{Resource: configMaps, Namespace: objNS})
	require.NoError(t, err)
	set, err := informer.NewShardSet()
	require.NoError(t, err)
	f := informer.NewFactory(r.client, informer.Options{Namespace: objNS, ShardSet: set})
	cms, err := informer.For[*corev1.ConfigMap](f)
	require.NoError(t, err)
	keeper, err := sharding.NewSlotKeeper(m, set, f.HasSynced, sharding.SlotKeeperOptions{})
	require.NoError(t, err)
	c, err := controller.New(id, controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
		r.checker.start(key.String(), id)
		defer r.checker.end(key.String(), id)
		select {
		case <-time.After(time.Duration(rand.IntN(20)) * time.Millisecond):
		case <-ctx.Done():
		}
		return controller.Result{}, nil
	}), controller.Options[controller.Key]{Workers: 4})
	require.NoError(t, err)
	require.NoError(t, controller.Watch(c, cms, controller.EnqueueObject))
	d, err := sharding.NewSlotDispatcher(keeper, cms, c.Enqueue)
	require.NoError(t, err)
	require.NoError(t, c.SetAdmission(d))
	g, err := sharding.NewGroup(id, m, sh, f, keeper, d, c)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(r.ctx)
	sm := &slotMember{cms: cms, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(sm.done)
		sm.err = g.Run(ctx)
	}()
	r.mu.Lock()
	r.running[id] = sm
	r.mu.Unlock()
	t.Cleanup(func() { r.stop(id) })
}

func (r *slotRing) stop(id string) {
	r.mu.Lock()
	sm := r.running[id]
	delete(r.running, id)
	r.mu.Unlock()
	if sm == nil {
		return
	}
	sm.cancel()
	select {
	case <-sm.done:
		if !errors.Is(sm.err, sharding.ErrMembershipLost) { // a partitioned member's end
			require.NoError(r.t, sm.err)
		}
	case <-time.After(30 * time.Second):
		r.t.Errorf("member %s did not stop within 30s", id)
	}
}

// settled waits until the members' caches split the objects exactly (each
// object in one cache, none missing) and every object was last reconciled
// by the member caching it.
func (r *slotRing) settled(what string) {
	r.t.Helper()
	deadline := time.Now().Add(settleWait)
	var last string
	for time.Now().Before(deadline) {
		if last = r.split(); last == "" {
			r.t.Logf("%s: settled", what)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.t.Fatalf("%s: not settled within %v: %s", what, settleWait, last)
}

// split returns "" when the caches split the objects and their last
// reconciles match, else what is wrong.
func (r *slotRing) split() string {
	r.mu.Lock()
	members := maps.Clone(r.running)
	r.mu.Unlock()
	owner := map[string]string{}
	for _, id := range slices.Sorted(maps.Keys(members)) {
		for _, key := range members[id].cms.Informer().GetStore().ListKeys() {
			if other, ok := owner[key]; ok {
				return fmt.Sprintf("%s cached by %s and %s", key, other, id)
			}
			owner[key] = id
		}
	}
	// The protocol is at rest: each member serves what it is assigned, and
	// the members' slots cover the hash space.
	served := 0
	for id := range members {
		l, err := r.client.CoordinationV1().Leases(r.ns).Get(r.ctx, ringName+"."+id, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		assigned, serving := l.Annotations[sharding.SlotsAnnotation(ringName)], l.Annotations[sharding.ServingAnnotation(ringName)]
		if assigned == "" || assigned != serving {
			return fmt.Sprintf("member %s assigned %q, serving %q", id, assigned, serving)
		}
		_, slots, err := sharding.ParseSlotRecord(serving)
		if err != nil {
			return err.Error()
		}
		served += len(slots)
	}
	if served != sharding.Slots {
		return fmt.Sprintf("%d slots served", served)
	}
	for _, key := range r.keys {
		id, ok := owner[key]
		if !ok {
			return key + " cached by no member"
		}
		if got := r.checker.last(key); got != id {
			return fmt.Sprintf("%s cached by %s, last reconciled by %q", key, id, got)
		}
	}
	return ""
}

// touch changes every object, so that each is reconciled again, and waits
// until each was reconciled by its member (the one caching it).
func (r *slotRing) touch(what string) {
	r.t.Helper()
	for _, key := range r.keys {
		r.checker.mu.Lock()
		delete(r.checker.lastBy, key)
		r.checker.mu.Unlock()
		ns, name, _ := strings.Cut(key, "/")
		_, err := r.client.CoreV1().ConfigMaps(ns).Patch(r.ctx, name, "application/merge-patch+json",
			[]byte(fmt.Sprintf(`{"data":{"touched":%q}}`, what)), metav1.PatchOptions{})
		require.NoError(r.t, err)
	}
	r.settled(what)
}

// A server-side ring on the fake cluster (which serves shard selectors as
// the API server does): members join and leave, every object is cached and
// reconciled by exactly one member, and no object is written by the ring.
func TestSlotRingOnFakeCluster(t *testing.T) {
	cluster, err := fakecluster.New()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runSlotRing(t, ctx, cluster.Clientset(), nil, "default")
}

// A ring hashing namespaces: a namespace's objects are cached and
// reconciled by one member, the one serving its namespace's slot, through
// joins and a leave.
func TestSlotRingByNamespaceOnFakeCluster(t *testing.T) {
	cluster, err := fakecluster.New()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var namespaces []string
	for i := range 24 {
		namespaces = append(namespaces, fmt.Sprintf("team-%02d", i))
	}
	r := newNamespaceSlotRing(t, ctx, cluster.Clientset(), "ring", namespaces, 5)
	r.start("a")
	r.settled("one member")
	r.start("b")
	r.start("c")
	r.settled("three members")
	r.touch("three members")
	owners := map[string]map[string]bool{} // namespace -> members caching its objects
	r.mu.Lock()
	for id, m := range r.running {
		for _, key := range m.cms.Informer().GetStore().ListKeys() {
			ns, _, _ := strings.Cut(key, "/")
			if owners[ns] == nil {
				owners[ns] = map[string]bool{}
			}
			owners[ns][id] = true
		}
	}
	r.mu.Unlock()
	for ns, ids := range owners {
		require.Len(t, ids, 1, "namespace %s split across %v", ns, ids)
	}
	r.stop("b")
	r.settled("b left")
	r.touch("b left")
	r.checker.check(t)
}

// The same ring on the kube-apiserver built by hack/install-kube.sh, with
// its alpha ShardedListAndWatch gate on.
func TestAPIServerSlotRing(t *testing.T) {
	env := testkit.NewAPIServerWithOptions(t, testkit.APIServerOptions{FeatureGates: map[string]bool{"ShardedListAndWatch": true}})
	served, err := sharding.ServesShardSelector(env.Context(), env.Client(), env.Namespace())
	require.NoError(t, err)
	require.True(t, served, "the gate is on")
	shared := testkit.SharedAPIServer(t)
	served, err = sharding.ServesShardSelector(shared.Context(), shared.Client(), shared.Namespace())
	require.NoError(t, err)
	require.False(t, served, "the shared server runs without the gate")

	// Every write of the members and sharders (Lease renewals, slot and
	// served records) meets refusals and lost replies.
	seed := rand.Uint64() % 1_000_000
	if s := os.Getenv(envSeed); s != "" {
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "%s must be a seed", envSeed)
	}
	t.Logf("write faults from seed %d: rerun this schedule with %s=%d", seed, envSeed, seed)
	faults := newWriteFaults(seed, 0.1, 0.1)
	faulty, err := kubernetes.NewForConfig(faults.wrap(env.Config()))
	require.NoError(t, err)
	runSlotRing(t, env.Context(), env.Client(), faulty, env.Namespace())
	t.Logf("write faults: %v", faults)
	require.NotZero(t, faults.lost.Load(), "no reply lost")
}

// runSlotRing runs the scenario with the members' Leases written through
// members (nil: client).
func runSlotRing(t *testing.T, ctx context.Context, client, members kubernetes.Interface, ns string) {
	r := newSlotRing(t, ctx, client, ns, 200)
	if members != nil {
		r.members = members
	}
	r.start("a")
	r.settled("one member")
	r.start("b")
	r.start("c")
	r.settled("three members")
	r.touch("three members")
	r.stop("c")
	r.settled("c left")
	r.start("c")
	r.settled("c rejoined")
	r.touch("c rejoined")

	// d is cut from the Leases without releasing its own: it stops after
	// RenewDeadline, and its slots are freed once the sharder has seen its
	// Lease unrenewed for LeaseDuration and read it again.
	cut := new(atomic.Bool)
	r.startWith("d", partitionable{Interface: r.members, cut: cut})
	r.settled("d joined")
	cut.Store(true)
	r.mu.Lock()
	d := r.running["d"]
	delete(r.running, "d")
	r.mu.Unlock()
	select {
	case <-d.done:
		require.ErrorIs(t, d.err, sharding.ErrMembershipLost)
	case <-time.After(settleWait):
		t.Fatal("the partitioned member did not stop")
	}
	r.settled("d partitioned")
	r.touch("d partitioned")
	r.checker.check(t)
	list, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, cm := range list.Items {
		require.Empty(t, cm.Labels, "the ring wrote on %s", cm.Name)
		require.Empty(t, cm.Annotations, "the ring wrote on %s", cm.Name)
	}
}
