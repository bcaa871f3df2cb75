package sharding

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
)

var (
	owners = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	pods   = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	t0     = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

// fakeAPI stores object metadata and applies the protocol's patches with the
// API server's rules for them: the resourceVersion in the patch is a
// precondition, every write stamps a new one. Its cache is a copy taken
// with refresh, so a test decides how stale the sharder's view is.
type fakeAPI struct {
	mu     sync.Mutex
	rv     uint64
	objs   map[string]*metav1.PartialObjectMetadata // "resource/namespace/name"
	cache  map[string]*metav1.PartialObjectMetadata
	writes []string
	// lose, when set, is asked for every write that succeeded: true loses
	// the reply (the write stays, the caller gets an error).
	lose func(write string) bool
	// refuse, when set, is asked for every patch of resource/name: true
	// fails it before it is applied, as a 5xx would.
	refuse func(resource, name string) bool
	// lists counts the sharder's reads of labelled children.
	lists int
}

// list serves the sharder's LISTs of children from the current state: the
// pods of ns its label selector selects, in one page; lists counts them.
func (f *fakeAPI) list(_ context.Context, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	sel, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	out := &metav1.PartialObjectMetadataList{}
	for k, o := range f.objs {
		if strings.HasPrefix(k, gvr.Resource+"/"+ns+"/") && sel.Matches(labels.Set(o.Labels)) {
			out.Items = append(out.Items, *o.DeepCopy())
		}
	}
	return out, nil
}

// strays returns the cached pods controlled by uid without the ring's label:
// what the sharder caches of the children.
func (f *fakeAPI) strays(uid types.UID) []child {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []child
	for k, o := range f.cache {
		if len(o.OwnerReferences) == 0 || o.OwnerReferences[0].UID != uid || !strings.HasPrefix(k, pods.Resource+"/") {
			continue
		}
		if _, ok := o.Labels[Label("r")]; !ok {
			out = append(out, child{gvr: pods, obj: o.DeepCopy()})
		}
	}
	return out
}

func newFakeAPI() *fakeAPI {
	return &fakeAPI{objs: map[string]*metav1.PartialObjectMetadata{}, cache: map[string]*metav1.PartialObjectMetadata{}}
}

func (f *fakeAPI) add(gvr schema.GroupVersionResource, name string, labels map[string]string, owner *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rv++
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: name, UID: types.UID(gvr.Resource + "-" + name), Labels: labels,
		ResourceVersion: strconv.FormatUint(f.rv, 10),
	}}
	if m := labels[Label("r")]; m != "" && owner == nil {
		// Assigned: stamped for the member's process, as the sharder does.
		o.Annotations = map[string]string{HolderAnnotation("r"): testHolderOf(m)}
	}
	if owner != nil {
		o.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner.Name, UID: owner.UID, Controller: ptrBool(true)}}
	}
	f.objs[gvr.Resource+"/ns/"+name] = o
	return o.DeepCopy()
}

func ptrBool(b bool) *bool { return &b }

// testHolderOf is the Lease holder of member m in the sharder's tests.
func testHolderOf(m string) string { return m + "_0" }

func (f *fakeAPI) refresh() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cache = map[string]*metav1.PartialObjectMetadata{}
	for k, o := range f.objs {
		f.cache[k] = o.DeepCopy()
	}
}

func (f *fakeAPI) get(gvr schema.GroupVersionResource, name string) *metav1.PartialObjectMetadata {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.objs[gvr.Resource+"/ns/"+name].DeepCopy()
}

func (f *fakeAPI) takeWrites() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := f.writes
	f.writes = nil
	return w
}

func (f *fakeAPI) patch(_ context.Context, gvr schema.GroupVersionResource, ns, name string, data []byte) (*metav1.PartialObjectMetadata, error) {
	var p struct {
		Metadata struct {
			ResourceVersion string             `json:"resourceVersion"`
			Labels          map[string]*string `json:"labels"`
			Annotations     map[string]*string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.objs[gvr.Resource+"/"+ns+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	if f.refuse != nil && f.refuse(gvr.Resource, name) {
		return nil, apierrors.NewInternalError(fmt.Errorf("patch of %s/%s refused", gvr.Resource, name))
	}
	if p.Metadata.ResourceVersion != o.ResourceVersion {
		return nil, apierrors.NewConflict(gvr.GroupResource(), name, fmt.Errorf("version %s, not %s", o.ResourceVersion, p.Metadata.ResourceVersion))
	}
	apply := func(m map[string]string, p map[string]*string) map[string]string {
		if m == nil {
			m = map[string]string{}
		}
		for k, v := range p {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = *v
			}
		}
		return m
	}
	o.Labels = apply(o.Labels, p.Metadata.Labels)
	o.Annotations = apply(o.Annotations, p.Metadata.Annotations)
	f.rv++
	o.ResourceVersion = strconv.FormatUint(f.rv, 10)
	w := fmt.Sprintf("%s/%s labels=%v", gvr.Resource, name, o.Labels)
	if len(p.Metadata.Annotations) > 0 {
		w += fmt.Sprintf(" annotations=%v", o.Annotations)
	}
	f.writes = append(f.writes, w)
	if f.lose != nil && f.lose(w) {
		return nil, fmt.Errorf("reply to %q lost", w)
	}
	return o.DeepCopy(), nil
}

// newTestTerm is a sharder term over api's cache, with live members.
func newTestTerm(t *testing.T, api *fakeAPI, clk *testingclock.FakeClock, m *Metrics, children bool, live ...string) *term {
	t.Helper()
	cfg := Config{Ring: "r", Identity: "sharder", LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 300 * time.Millisecond}.WithDefaults()
	opts := SharderOptions{Resource: owners, Kind: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}, Clock: clk, Metrics: m}
	if children {
		opts.Children = []schema.GroupVersionResource{pods}
	}
	tm := newTermState(cfg, opts, api)
	t.Cleanup(tm.queue.ShutDown)
	holders := map[string]string{}
	for _, m := range live {
		holders[m] = testHolderOf(m)
	}
	tm.view = newSnapshot("r", holders, unitWeights(holders))
	tm.ownerGet = func(key string) (*metav1.PartialObjectMetadata, bool) {
		api.mu.Lock()
		defer api.mu.Unlock()
		o, ok := api.cache[owners.Resource+"/"+key]
		return o, ok
	}
	// The cache holds the children without the ring's label; the others
	// are listed from the API server's current state.
	tm.childrenOf = func(uid types.UID) []child {
		return api.strays(uid)
	}
	if children {
		tm.lists = newChildLists("r", clk, api.list)
	}
	return tm
}

// nameFor finds an object name that ring gives to member.
func nameFor(t *testing.T, members []string, member string) string {
	r := NewRing("r", members)
	for i := range 1000 {
		if n := fmt.Sprintf("rs-%d", i); r.Owner("ns/"+n) == member {
			return n
		}
	}
	t.Fatalf("no name for %s", member)
	return ""
}

func TestSyncAssignsUnlabelledOwners(t *testing.T) {
	api := newFakeAPI()
	tm := newTestTerm(t, api, testingclock.NewFakeClock(t0), nil, false, "a", "b", "c")
	r := NewRing("r", []string{"a", "b", "c"})
	for i := range 30 {
		api.add(owners, fmt.Sprintf("rs-%d", i), nil, nil)
	}
	api.refresh()
	for i := range 30 {
		_, err := tm.sync(context.Background(), fmt.Sprintf("ns/rs-%d", i))
		require.NoError(t, err)
	}
	for i := range 30 {
		name := fmt.Sprintf("rs-%d", i)
		assert.Equal(t, r.Owner("ns/"+name), api.get(owners, name).Labels[Label("r")], name)
	}
	assert.Len(t, api.takeWrites(), 30)

	// Assigned and steady: nothing to write.
	api.refresh()
	for i := range 30 {
		_, err := tm.sync(context.Background(), fmt.Sprintf("ns/rs-%d", i))
		require.NoError(t, err)
	}
	assert.Empty(t, api.takeWrites())
}

// A key moving from live member a to b is drained by a first; children are
// relabelled before the owner, whose barrier names the newest child version.
func TestSyncDrainsThenAssigns(t *testing.T) {
	api := newFakeAPI()
	clk := testingclock.NewFakeClock(t0)
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	tm := newTestTerm(t, api, clk, m, true, "a", "b")
	name := nameFor(t, []string{"a", "b"}, "b")
	owner := api.add(owners, name, map[string]string{Label("r"): "a"}, nil)
	api.add(pods, name+"-x", map[string]string{Label("r"): "a"}, owner)
	api.add(pods, name+"-y", nil, owner)
	api.refresh()
	ctx := context.Background()

	_, err = tm.sync(ctx, "ns/"+name)
	require.NoError(t, err)
	assert.Equal(t, []string{fmt.Sprintf("replicasets/%s labels=map[%s:true %s:a]", name, DrainLabel("r"), Label("r"))}, api.takeWrites())
	assert.Equal(t, 1.0, testutil.ToFloat64(m.drainsPending.WithLabelValues("r")))

	// Until a acknowledges, nothing moves: not even when a is wanted again.
	api.refresh()
	_, err = tm.sync(ctx, "ns/"+name)
	require.NoError(t, err)
	assert.Empty(t, api.takeWrites())

	// a acknowledges: both labels go.
	o := api.get(owners, name)
	_, err = api.patch(ctx, owners, "ns", name, metaPatch(o.ResourceVersion, map[string]*string{Label("r"): nil, DrainLabel("r"): nil}, nil))
	require.NoError(t, err)
	api.takeWrites()
	api.refresh()
	clk.Step(1500 * time.Millisecond)

	// The children are relabelled at once: the labelled one as listed, the
	// other as cached.
	_, err = tm.sync(ctx, "ns/"+name)
	require.NoError(t, err)
	writes := api.takeWrites()
	require.Len(t, writes, 3, "two children, then the owner: %v", writes)
	assert.Contains(t, writes[2], "replicasets/"+name)
	last := api.get(pods, name+"-y").ResourceVersion
	if v := api.get(pods, name+"-x").ResourceVersion; v > last {
		last = v
	}
	got := api.get(owners, name)
	assert.Equal(t, "b", got.Labels[Label("r")])
	assert.NotContains(t, got.Labels, DrainLabel("r"))
	assert.Equal(t, "pods="+last, got.Annotations[barrierAnnotation("r")])
	assert.Equal(t, 1.0, testutil.ToFloat64(m.handovers.WithLabelValues("r")))
	assert.Equal(t, 0.0, testutil.ToFloat64(m.drainsPending.WithLabelValues("r")))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.reassignments.WithLabelValues("r", reasonDrained)))
	assert.Equal(t, 1, api.lists)
}

func TestSyncGivesADeadMembersKeysAway(t *testing.T) {
	api := newFakeAPI()
	tm := newTestTerm(t, api, testingclock.NewFakeClock(t0), nil, false, "a", "b")
	name := nameFor(t, []string{"a", "b"}, "b")
	api.add(owners, name, map[string]string{Label("r"): "gone", DrainLabel("r"): "true"}, nil)
	api.refresh()
	_, err := tm.sync(context.Background(), "ns/"+name)
	require.NoError(t, err)
	got := api.get(owners, name)
	assert.Equal(t, map[string]string{Label("r"): "b"}, got.Labels, "no drain for a dead member, and its drain label goes")
}

// A key stamped for an earlier process of a live member's identity (the
// member restarted: its Lease has a new holder) belongs to a dead process:
// it is assigned again at once, without a drain, stamped for the process
// holding the Lease now, and wherever the ring puts it. Found by the
// split-brain test: a restarted member reconciled the keys its former
// incarnation had kept, from its fresh cache, while the sharder, which had
// not yet seen the new holder, gave them to another member as a dead
// member's.
func TestSyncReassignsTheKeysOfARestartedMembersFormerProcess(t *testing.T) {
	api := newFakeAPI()
	tm := newTestTerm(t, api, testingclock.NewFakeClock(t0), nil, false, "a", "b")
	tm.view = newSnapshot("r", map[string]string{"a": "a_1", "b": "b_0"}, map[string]int{"a": 1, "b": 1})
	stay := nameFor(t, []string{"a", "b"}, "a")
	move := nameFor(t, []string{"a", "b"}, "b")
	api.add(owners, stay, map[string]string{Label("r"): "a"}, nil) // stamped a_0
	api.add(owners, move, map[string]string{Label("r"): "a", DrainLabel("r"): "true"}, nil)
	api.refresh()
	for _, name := range []string{stay, move} {
		_, err := tm.sync(context.Background(), "ns/"+name)
		require.NoError(t, err)
	}
	got := api.get(owners, stay)
	assert.Equal(t, map[string]string{Label("r"): "a"}, got.Labels)
	assert.Equal(t, "a_1", got.Annotations[HolderAnnotation("r")], "stamped for a's new process")
	got = api.get(owners, move)
	assert.Equal(t, map[string]string{Label("r"): "b"}, got.Labels, "no drain for a dead process, and its drain label goes")
	assert.Equal(t, "b_0", got.Annotations[HolderAnnotation("r")])

	// Stamped for the live process: steady.
	api.refresh()
	for _, name := range []string{stay, move} {
		_, err := tm.sync(context.Background(), "ns/"+name)
		require.NoError(t, err)
	}
	assert.Len(t, api.takeWrites(), 2, "two assignments, nothing after")
}

// Before giving a member's keys away without a drain, the sharder reads
// the member's Lease: a renewal its watch has not delivered yet keeps the
// keys where they are; a Lease found unchanged is read once per
// RetryPeriod, however many keys the member had.
func TestSyncReadsALeaseBeforeGivingItsKeysAway(t *testing.T) {
	api := newFakeAPI()
	clk := testingclock.NewFakeClock(t0)
	tm := newTestTerm(t, api, clk, nil, false, "a", "b")
	lease := func(id, rv string) *coordinationv1.Lease { return testLease(id, testHolderOf(id), rv) }
	stored, reads := lease("c", "2"), 0
	tm.getLease = func(_ context.Context, name string) (*coordinationv1.Lease, error) {
		require.Equal(t, "r.c", name)
		reads++
		return stored, nil
	}
	renewalOfCNotDelivered(t, tm, clk)
	first, second := nameFor(t, []string{"a", "b", "c"}, "c"), ""
	for i := range 1000 {
		if n := fmt.Sprintf("rs-%d", i); n != first && NewRing("r", []string{"a", "b", "c"}).Owner("ns/"+n) == "c" {
			second = n
			break
		}
	}
	api.add(owners, first, map[string]string{Label("r"): "c"}, nil)
	api.add(owners, second, map[string]string{Label("r"): "c"}, nil)
	api.refresh()

	_, err := tm.sync(context.Background(), "ns/"+first)
	require.NoError(t, err)
	assert.Empty(t, api.takeWrites(), "c renewed: its key stays")
	assert.Equal(t, []string{"a", "b", "c"}, tm.snapshot().members())

	// c really stops renewing.
	clk.Step(3 * time.Second)
	tm.live.observe(lease("a", "3"))
	tm.live.observe(lease("b", "3"))
	tm.refresh()
	reads = 0
	for _, name := range []string{first, second} {
		_, err := tm.sync(context.Background(), "ns/"+name)
		require.NoError(t, err)
		assert.NotEqual(t, "c", api.get(owners, name).Labels[Label("r")], name)
	}
	assert.Equal(t, 1, reads, "one read for the dead member's keys")
}

// A write whose reply was lost is not repeated blindly: the next look at
// the stored object finds it done.
func TestSyncAfterALostReply(t *testing.T) {
	api := newFakeAPI()
	api.lose = func(string) bool { return true }
	tm := newTestTerm(t, api, testingclock.NewFakeClock(t0), nil, false, "a", "b")
	name := nameFor(t, []string{"a", "b"}, "a")
	api.add(owners, name, nil, nil)
	api.refresh()
	_, err := tm.sync(context.Background(), "ns/"+name)
	require.Error(t, err, "the lost reply is an error, so the key is retried")
	require.Len(t, api.takeWrites(), 1)

	// Retried on the stale view: the precondition fails, nothing is written.
	_, err = tm.sync(context.Background(), "ns/"+name)
	require.True(t, apierrors.IsConflict(err), "%v", err)
	assert.Empty(t, api.takeWrites())

	api.lose = nil
	api.refresh()
	_, err = tm.sync(context.Background(), "ns/"+name)
	require.NoError(t, err)
	assert.Empty(t, api.takeWrites())
	assert.Equal(t, "a", api.get(owners, name).Labels[Label("r")])
}

// A decision made on a stale view fails its precondition instead of
// overwriting a newer one.
func TestSyncOnAStaleViewConflicts(t *testing.T) {
	api := newFakeAPI()
	tm := newTestTerm(t, api, testingclock.NewFakeClock(t0), nil, false, "a", "b")
	name := nameFor(t, []string{"a", "b"}, "b")
	api.add(owners, name, map[string]string{Label("r"): "a"}, nil)
	api.refresh()
	// Meanwhile a user relabels the object (or another sharder acted).
	o := api.get(owners, name)
	_, err := api.patch(context.Background(), owners, "ns", name, metaPatch(o.ResourceVersion, map[string]*string{"app": ptr("web")}, nil))
	require.NoError(t, err)
	api.takeWrites()

	_, err = tm.sync(context.Background(), "ns/"+name)
	require.True(t, apierrors.IsConflict(err), "%v", err)
	assert.Empty(t, api.takeWrites())
	api.refresh()
	_, err = tm.sync(context.Background(), "ns/"+name)
	require.NoError(t, err)
	assert.Equal(t, "true", api.get(owners, name).Labels[DrainLabel("r")])
}

func TestSyncWithoutMembersWaits(t *testing.T) {
	api := newFakeAPI()
	tm := newTestTerm(t, api, testingclock.NewFakeClock(t0), nil, false)
	api.add(owners, "rs", nil, nil)
	api.refresh()
	_, err := tm.sync(context.Background(), "ns/rs")
	require.NoError(t, err)
	assert.Empty(t, api.takeWrites())
}

// Children of an owner already with its member follow it (a child created
// without Inherit), without touching the owner.
func TestSyncRelabelsStrayChildren(t *testing.T) {
	api := newFakeAPI()
	tm := newTestTerm(t, api, testingclock.NewFakeClock(t0), nil, true, "a", "b")
	name := nameFor(t, []string{"a", "b"}, "a")
	owner := api.add(owners, name, map[string]string{Label("r"): "a"}, nil)
	api.add(pods, name+"-new", nil, owner)
	api.refresh()
	_, err := tm.sync(context.Background(), "ns/"+name)
	require.NoError(t, err)
	assert.Equal(t, "a", api.get(pods, name+"-new").Labels[Label("r")])
	assert.Len(t, api.takeWrites(), 1)
}

func TestLivenessJudgesByTheObserversClock(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	l := newLiveness("r", 2*time.Second, clk)
	lease := func(name, holder, rv string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
	}
	l.observe(lease("r.a", "a_1", "1"))
	l.observe(lease("r.b", "b_1", "1"))
	l.observe(lease("r.c", "", "1"))        // released
	l.observe(lease("other.d", "d_1", "1")) // another ring
	assert.Equal(t, []string{"a", "b"}, l.live())
	clk.Step(1500 * time.Millisecond)
	l.observe(lease("r.a", "a_1", "2"))
	l.observe(lease("r.b", "b_1", "1")) // unchanged: not a renewal
	clk.Step(600 * time.Millisecond)
	assert.Equal(t, []string{"a"}, l.live())
	// A deleted Lease is not a released one: its member stays live until
	// its last renewal is a LeaseDuration old.
	l.forget(lease("r.a", "a_1", "2"))
	assert.Equal(t, []string{"a"}, l.live())
	clk.Step(1500 * time.Millisecond)
	assert.Empty(t, l.live())
	l.mu.Lock()
	assert.NotContains(t, l.seen, "a", "forgotten once expired")
	l.mu.Unlock()
}

// The assignment that ends a handover loses its reply: the handover is
// counted once, when the sharder finds the assignment stored.
func TestSyncCountsAHandoverWhoseReplyWasLost(t *testing.T) {
	api := newFakeAPI()
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	tm := newTestTerm(t, api, testingclock.NewFakeClock(t0), m, false, "a", "b")
	name := nameFor(t, []string{"a", "b"}, "b")
	api.add(owners, name, map[string]string{Label("r"): "a"}, nil)
	api.refresh()
	ctx := context.Background()
	_, err = tm.sync(ctx, "ns/"+name)
	require.NoError(t, err)
	o := api.get(owners, name)
	_, err = api.patch(ctx, owners, "ns", name, metaPatch(o.ResourceVersion, map[string]*string{Label("r"): nil, DrainLabel("r"): nil}, nil))
	require.NoError(t, err)
	api.refresh()

	api.lose = func(string) bool { return true }
	_, err = tm.sync(ctx, "ns/"+name)
	require.Error(t, err)
	api.lose = nil
	assert.Equal(t, 0.0, testutil.ToFloat64(m.handovers.WithLabelValues("r")))
	api.refresh()
	for range 2 {
		_, err = tm.sync(ctx, "ns/"+name)
		require.NoError(t, err)
	}
	assert.Equal(t, 1.0, testutil.ToFloat64(m.handovers.WithLabelValues("r")))
	assert.Equal(t, 0.0, testutil.ToFloat64(m.drainsPending.WithLabelValues("r")))
}

// A handover reads the owner's labelled children from the API server, at
// once: a child the previous owner created just before it stopped, which no
// cache may hold yet, is relabelled with the others and raises the barrier.
func TestSyncListsTheChildrenOfAHandover(t *testing.T) {
	api := newFakeAPI()
	clk := testingclock.NewFakeClock(t0)
	tm := newTestTerm(t, api, clk, nil, true, "b")
	name := nameFor(t, []string{"b"}, "b")
	owner := api.add(owners, name, map[string]string{Label("r"): "gone"}, nil)
	api.add(pods, name+"-early", map[string]string{Label("r"): "gone"}, owner)
	api.refresh()
	api.add(pods, name+"-late", map[string]string{Label("r"): "gone"}, owner) // not in the cache
	ctx := context.Background()

	wait, err := tm.sync(ctx, "ns/"+name)
	require.NoError(t, err)
	assert.Zero(t, wait)
	assert.Equal(t, 1, api.lists)
	assert.Equal(t, "b", api.get(pods, name+"-late").Labels[Label("r")], "the uncached child is relabelled")
	assert.Equal(t, "b", api.get(pods, name+"-early").Labels[Label("r")])
	got := api.get(owners, name)
	assert.Equal(t, "b", got.Labels[Label("r")])
	late := api.get(pods, name+"-late").ResourceVersion
	early := api.get(pods, name+"-early").ResourceVersion
	assert.Equal(t, "pods="+max(late, early), got.Annotations[barrierAnnotation("r")])
}

// An owner that never had a member lists nothing: its children can only be
// without the ring's label, and those are cached.
func TestSyncAssignsANewOwnerWithoutListing(t *testing.T) {
	api := newFakeAPI()
	tm := newTestTerm(t, api, testingclock.NewFakeClock(t0), nil, true, "a")
	owner := api.add(owners, "rs", nil, nil)
	api.add(pods, "rs-x", nil, owner)
	api.refresh()
	_, err := tm.sync(context.Background(), "ns/rs")
	require.NoError(t, err)
	assert.Zero(t, api.lists)
	assert.Equal(t, "a", api.get(pods, "rs-x").Labels[Label("r")])
	assert.Equal(t, "a", api.get(owners, "rs").Labels[Label("r")])

	// Drained by an earlier sharder (both labels gone, the holder stamp
	// left): this sharder has no record of the drain, and lists.
	o := api.get(owners, "rs")
	_, err = api.patch(context.Background(), owners, "ns", "rs", metaPatch(o.ResourceVersion, map[string]*string{Label("r"): nil}, nil))
	require.NoError(t, err)
	api.refresh()
	_, err = tm.sync(context.Background(), "ns/rs")
	require.NoError(t, err)
	assert.Equal(t, 1, api.lists)
}

// The keys of one burst of handovers share a LIST of their children: each
// key's mark is that of the event that brought its owner's version, which
// precedes the first LIST. A key whose owner changed since its event lists
// again, as does one after a failed relabel.
func TestSyncHandoversShareAChildrenList(t *testing.T) {
	api := newFakeAPI()
	tm := newTestTerm(t, api, testingclock.NewFakeClock(t0), nil, true, "b")
	var names []string
	for i := range 3 {
		name := fmt.Sprintf("rs-%d", i)
		names = append(names, name)
		owner := api.add(owners, name, map[string]string{Label("r"): "gone"}, nil)
		api.add(pods, name+"-x", map[string]string{Label("r"): "gone"}, owner)
	}
	api.refresh()
	for _, name := range names[:2] {
		tm.enqueueObject(api.get(owners, name))
	}
	for _, name := range names[:2] {
		_, err := tm.sync(context.Background(), "ns/"+name)
		require.NoError(t, err)
		assert.Equal(t, "b", api.get(owners, name).Labels[Label("r")])
		assert.Equal(t, "b", api.get(pods, name+"-x").Labels[Label("r")])
	}
	assert.Equal(t, 1, api.lists, "one children LIST for the burst")
	tm.mu.Lock()
	assert.NotContains(t, tm.marks, "ns/"+names[0], "forgotten once assigned")
	tm.mu.Unlock()

	// rs-2's owner changed after its event: its mark is not good for it.
	tm.enqueueObject(api.get(owners, names[2]))
	o := api.get(owners, names[2])
	_, err := api.patch(context.Background(), owners, "ns", names[2], metaPatch(o.ResourceVersion, nil, map[string]*string{"x": ptr("y")}))
	require.NoError(t, err)
	api.refresh()
	_, err = tm.sync(context.Background(), "ns/"+names[2])
	require.NoError(t, err)
	assert.Equal(t, 2, api.lists)
}

// A relabel that fails drops the LIST it used (its versions may be stale
// now: the write may have been applied), so the retry lists again.
func TestSyncRetriesAFailedRelabelFromAFreshList(t *testing.T) {
	api := newFakeAPI()
	tm := newTestTerm(t, api, testingclock.NewFakeClock(t0), nil, true, "b")
	owner := api.add(owners, "rs", map[string]string{Label("r"): "gone"}, nil)
	api.add(pods, "rs-x", map[string]string{Label("r"): "gone"}, owner)
	api.refresh()
	tm.enqueueObject(api.get(owners, "rs"))
	api.lose = func(string) bool { return true }
	_, err := tm.sync(context.Background(), "ns/rs")
	require.Error(t, err, "the child's relabel lost its reply")
	api.lose = nil
	_, err = tm.sync(context.Background(), "ns/rs")
	require.NoError(t, err)
	assert.Equal(t, 2, api.lists)
	got := api.get(owners, "rs")
	assert.Equal(t, "b", got.Labels[Label("r")])
	assert.Equal(t, "pods="+api.get(pods, "rs-x").ResourceVersion, got.Annotations[barrierAnnotation("r")],
		"the barrier names the version the lost reply wrote")
}

// The view a sync starts from may be refreshed before the sync reads the
// Lease: by the other worker's read, or by the watch delivering the
// renewal. The read's verdict is the view it leaves, not whether the read
// itself changed the view (seen in the split-brain test: two workers found
// a live member dead at once; the second, finding the view already
// refreshed, gave the member's key away without a drain).
func TestSyncJudgesOnTheViewAfterTheLeaseRead(t *testing.T) {
	api := newFakeAPI()
	clk := testingclock.NewFakeClock(t0)
	tm := newTestTerm(t, api, clk, nil, false, "a", "b")
	lease := func(id, rv string) *coordinationv1.Lease { return testLease(id, testHolderOf(id), rv) }
	renewalOfCNotDelivered(t, tm, clk)
	stored := lease("c", "2")
	tm.getLease = func(context.Context, string) (*coordinationv1.Lease, error) {
		// Between this sync's view and its read, the renewal reaches the
		// view some other way.
		tm.live.observe(stored)
		tm.refresh()
		return stored, nil
	}
	name := nameFor(t, []string{"a", "b", "c"}, "c")
	api.add(owners, name, map[string]string{Label("r"): "c"}, nil)
	api.refresh()

	_, err := tm.sync(context.Background(), "ns/"+name)
	require.NoError(t, err)
	assert.Empty(t, api.takeWrites(), "c is live: its key stays")
	assert.Equal(t, "c", api.get(owners, name).Labels[Label("r")])
}

// The keys of a restarted member's former process are given away after one
// read of the member's Lease, however many there are.
func TestSyncReadsARestartedMembersLeaseOnce(t *testing.T) {
	api := newFakeAPI()
	clk := testingclock.NewFakeClock(t0)
	tm := newTestTerm(t, api, clk, nil, false, "a", "b")
	stored, reads := testLease("c", "c_1", "2"), 0
	tm.getLease = func(context.Context, string) (*coordinationv1.Lease, error) {
		reads++
		return stored, nil
	}
	for _, id := range []string{"a", "b"} {
		tm.live.observe(testLease(id, testHolderOf(id), "1"))
	}
	tm.live.observe(stored)
	tm.refresh()
	var names []string
	for i := 0; len(names) < 3; i++ {
		if n := fmt.Sprintf("rs-%d", i); NewRing("r", []string{"a", "b", "c"}).Owner("ns/"+n) == "c" {
			names = append(names, n)
			api.add(owners, n, map[string]string{Label("r"): "c"}, nil) // stamped c_0
		}
	}
	api.refresh()
	for _, n := range names {
		_, err := tm.sync(context.Background(), "ns/"+n)
		require.NoError(t, err)
		assert.Equal(t, "c_1", api.get(owners, n).Annotations[HolderAnnotation("r")], "%s stamped for c's new process", n)
	}
	assert.Equal(t, 1, reads, "one read for the former process's keys")
}

// renewalOfCNotDelivered has members a, b and c seen at version 1, then
// LeaseDuration pass with a's and b's renewals (version 2) delivered and
// c's not: the view holds a and b.
func renewalOfCNotDelivered(t *testing.T, tm *term, clk *testingclock.FakeClock) {
	t.Helper()
	for _, id := range []string{"a", "b", "c"} {
		tm.live.observe(testLease(id, testHolderOf(id), "1"))
	}
	clk.Step(3 * time.Second) // past LeaseDuration
	tm.live.observe(testLease("a", testHolderOf("a"), "2"))
	tm.live.observe(testLease("b", testHolderOf("b"), "2"))
	tm.refresh()
	require.Equal(t, []string{"a", "b"}, tm.snapshot().members())
}

// testLease is member id's Lease held by holder at version rv.
func testLease(id, holder, rv string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "r." + id, ResourceVersion: rv}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
}

// An assignment that labelled the children for one member and then failed
// to write the owner leaves them out of the sharder's cache of unlabelled
// children. When the next look finds the owner's member live again (its
// renewal arrived meanwhile), the children are listed and labelled back,
// not left with a member that does not own them.
func TestSyncRelabelsTheChildrenOfAFailedAssignment(t *testing.T) {
	api := newFakeAPI()
	clk := testingclock.NewFakeClock(t0)
	tm := newTestTerm(t, api, clk, nil, true, "a", "b")
	renewalOfCNotDelivered(t, tm, clk)
	name := nameFor(t, []string{"a", "b", "c"}, "c")
	owner := api.add(owners, name, map[string]string{Label("r"): "c"}, nil)
	api.add(pods, name+"-x", map[string]string{Label("r"): "c"}, owner)
	api.refresh()
	api.refuse = func(resource, _ string) bool { return resource == owners.Resource }
	_, err := tm.sync(context.Background(), "ns/"+name)
	require.Error(t, err, "the owner's write was refused")
	require.NotEqual(t, "c", api.get(pods, name+"-x").Labels[Label("r")], "the child was labelled for the new member first")

	api.refuse = nil
	tm.live.observe(testLease("c", testHolderOf("c"), "2")) // c's renewal arrives
	tm.refresh()
	require.Equal(t, []string{"a", "b", "c"}, tm.snapshot().members())
	api.refresh()
	_, err = tm.sync(context.Background(), "ns/"+name)
	require.NoError(t, err)
	assert.Equal(t, "c", api.get(owners, name).Labels[Label("r")])
	assert.Equal(t, "c", api.get(pods, name+"-x").Labels[Label("r")], "the child is labelled for its owner's member again")

	// Steady from now on: no more lists.
	lists := api.lists
	api.refresh()
	_, err = tm.sync(context.Background(), "ns/"+name)
	require.NoError(t, err)
	assert.Equal(t, lists, api.lists)
}

// A read of a Lease may return an older state than the watch has delivered
// (its reply was slow), and the watch may deliver a state older than a read
// returned. Neither takes the view back: seen in the split-brain test, a
// slow read from before a member's new process acquired its Lease made the
// member look released, and the keys just stamped for the new process
// went to others without a drain.
func TestSyncIgnoresAnOlderLeaseState(t *testing.T) {
	api := newFakeAPI()
	clk := testingclock.NewFakeClock(t0)
	tm := newTestTerm(t, api, clk, nil, false, "a", "b")
	for _, id := range []string{"a", "b"} {
		tm.live.observe(testLease(id, testHolderOf(id), "1"))
	}
	tm.live.observe(testLease("c", "c_0", "5")) // c's former process, dead
	released := testLease("c", "", "6")
	released.Spec.HolderIdentity = nil
	tm.live.observe(testLease("c", "c_1", "7")) // the watch delivered the new process
	tm.refresh()
	require.Equal(t, map[string]string{"a": "a_0", "b": "b_0", "c": "c_1"}, tm.snapshot().live)
	tm.getLease = func(context.Context, string) (*coordinationv1.Lease, error) {
		return released, nil // sent before c_1 acquired; its reply comes now
	}
	name := nameFor(t, []string{"a", "b", "c"}, "c")
	api.add(owners, name, map[string]string{Label("r"): "c"}, nil) // stamped c_0
	api.refresh()
	_, err := tm.sync(context.Background(), "ns/"+name)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": "a_0", "b": "b_0", "c": "c_1"}, tm.snapshot().live, "the older state is ignored")
	got := api.get(owners, name)
	assert.Equal(t, "c", got.Labels[Label("r")])
	assert.Equal(t, "c_1", got.Annotations[HolderAnnotation("r")], "stamped for c's new process")

	// The same from the watch: an event older than what a read returned.
	tm.live.observe(testLease("c", "c_0", "5"))
	tm.refresh()
	assert.Equal(t, "c_1", tm.snapshot().live["c"])
}

// unitWeights gives every member of live weight 1.
func unitWeights(live map[string]string) map[string]int {
	out := make(map[string]int, len(live))
	for m := range live {
		out[m] = 1
	}
	return out
}

// A key's mark from its owner's event is no good when it predates the view
// that found the owner's member dead: a LIST of the namespace started in
// between (another key's handover) misses a child the member created just
// before it stopped. refresh re-marks every owner after publishing a view,
// but a worker may sync a key before its turn comes (seen in the
// split-brain test: the new member reconciled without a child its
// predecessor had created, still labelled for the predecessor).
func TestSyncListsAfterTheViewThatFoundTheMemberDead(t *testing.T) {
	api := newFakeAPI()
	clk := testingclock.NewFakeClock(t0)
	tm := newTestTerm(t, api, clk, nil, true, "a", "b")
	for _, id := range []string{"a", "b"} {
		tm.live.observe(testLease(id, testHolderOf(id), "1"))
	}
	tm.refresh()
	name := nameFor(t, []string{"b"}, "b")
	owner := api.add(owners, name, map[string]string{Label("r"): "a"}, nil)
	other := api.add(owners, "other", map[string]string{Label("r"): "gone"}, nil)
	api.refresh()
	ctx := context.Background()

	tm.enqueueObject(owner) // a is live: the key stays a's
	tm.enqueueObject(other)
	_, err := tm.sync(ctx, "ns/other") // lists the namespace's children
	require.NoError(t, err)
	require.Equal(t, 1, api.lists)

	api.add(pods, name+"-late", map[string]string{Label("r"): "a"}, owner) // a's last write
	clk.Step(3 * time.Second)                                              // a's Lease expires
	tm.live.observe(testLease("b", testHolderOf("b"), "2"))
	tm.refresh() // no owners informer here: the view changes, the marks do not
	require.Equal(t, []string{"b"}, tm.snapshot().members())

	_, err = tm.sync(ctx, "ns/"+name)
	require.NoError(t, err)
	assert.Equal(t, 2, api.lists, "the LIST before a stopped is not reused")
	assert.Equal(t, "b", api.get(pods, name+"-late").Labels[Label("r")], "a's last child goes with its owner")
	got := api.get(owners, name)
	assert.Equal(t, "b", got.Labels[Label("r")])
	assert.Equal(t, "pods="+api.get(pods, name+"-late").ResourceVersion, got.Annotations[barrierAnnotation("r")])
}

// The sharder's cache lags its own writes. A sync that reads an owner older
// than the sharder's last write of it waits for the cache: deciding on the
// older version would relabel the children away from the member the newer
// write assigned the owner to (seen in the split-brain test: an assignment
// to a member that joined, made on the version before the sharder's own
// assignment to another, moved the child, then failed on the owner's
// precondition; the other member's barrier had passed, and it reconciled
// without the child).
func TestSyncWaitsForTheCacheToShowItsOwnWrite(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fail    func(api *fakeAPI, name string) // how the owner's assignment write goes
		waits   bool                            // whether the next sync on the old version waits
		getting int                             // reads of the owner from the API server
	}{
		{name: "stored", waits: true},
		{name: "reply lost", waits: true, getting: 1, fail: func(api *fakeAPI, name string) {
			api.lose = func(w string) bool { return strings.HasPrefix(w, owners.Resource+"/"+name+" ") }
		}},
		{name: "refused", waits: false, getting: 1, fail: func(api *fakeAPI, name string) {
			api.refuse = func(resource, n string) bool { return resource == owners.Resource && n == name }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI()
			tm := newTestTerm(t, api, testingclock.NewFakeClock(t0), nil, true, "b")
			gets := 0
			tm.getOwner = func(_ context.Context, ns, name string) (*metav1.PartialObjectMetadata, error) {
				gets++
				return api.get(owners, name), nil
			}
			name := nameFor(t, []string{"a", "b"}, "a")
			owner := api.add(owners, name, nil, nil)
			api.add(pods, name+"-x", nil, owner)
			api.refresh()
			if tc.fail != nil {
				tc.fail(api, name)
			}
			ctx := context.Background()
			_, err := tm.sync(ctx, "ns/"+name)
			require.Equal(t, tc.fail != nil, err != nil, "%v", err)
			api.lose, api.refuse = nil, nil
			require.Equal(t, "b", api.get(pods, name+"-x").Labels[Label("r")], "the child goes first")
			api.takeWrites()

			if !tc.waits {
				api.refresh() // the child's relabel reaches the cache; the owner did not change
			}
			// a joins; the cache still holds the owner as it was before the write.
			tm.view = newSnapshot("r", map[string]string{"a": testHolderOf("a"), "b": testHolderOf("b")}, map[string]int{"a": 1, "b": 1})
			_, err = tm.sync(ctx, "ns/"+name)
			require.NoError(t, err)
			assert.Equal(t, tc.getting, gets)
			if tc.waits {
				assert.Empty(t, api.takeWrites(), "nothing is decided on a version older than the sharder's write")
				assert.Equal(t, "b", api.get(pods, name+"-x").Labels[Label("r")])

				api.refresh() // the owner's event
				_, err = tm.sync(ctx, "ns/"+name)
				require.NoError(t, err)
				assert.Equal(t, "true", api.get(owners, name).Labels[DrainLabel("r")], "b's key is drained for a")
				assert.Equal(t, "b", api.get(pods, name+"-x").Labels[Label("r")], "the child stays with b until the drain ends")
				api.refresh() // the drain's event
				_, err = tm.sync(ctx, "ns/"+name)
				require.NoError(t, err)
			} else {
				assert.Equal(t, "a", api.get(owners, name).Labels[Label("r")], "the write was not stored: the key is assigned on the version cached")
				assert.Equal(t, "a", api.get(pods, name+"-x").Labels[Label("r")], "the child labelled for b by the failed assignment follows")
				api.refresh()
				_, err = tm.sync(ctx, "ns/"+name)
				require.NoError(t, err)
			}
			tm.mu.Lock()
			assert.Empty(t, tm.fences, "fences end once the cache caught up or the write is known lost")
			tm.mu.Unlock()
		})
	}
}
