package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	coordv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/internal/netfault"
)

// This file is the test's API server: a fake clientset whose Lease writes obey optimistic
// concurrency (the fake tracker alone accepts any resourceVersion, so two candidates could
// both "win" an expired lease), a log of every committed Lease write, and per-candidate
// client wrappers that inject latency, lost replies and partitions.

var leasesGVR = coordinationv1.SchemeGroupVersion.WithResource("leases")

// commit is one Lease write the "server" accepted.
type commit struct {
	at     time.Time
	holder string
	prev   string // holder before this write
	rv     int64
}

// cluster is a fake clientset with resourceVersion-checked Lease writes.
type cluster struct {
	cs *fake.Clientset

	occ bool // enforce resourceVersion preconditions on update

	mu      sync.Mutex
	rv      int64
	commits []commit
	rnd     *rand.Rand // for failWrites; used under the Fake's lock, which serialises reactors
}

// newCluster returns a cluster whose Lease create/update fail with an InternalError with
// probability failWrites (before anything is stored).
func newCluster(failWrites float64, seed uint64) *cluster {
	return newClusterOCC(true, failWrites, seed)
}

// newClusterOCC with occ false keeps the fake tracker's own behaviour (any resourceVersion
// wins) but still logs commits; only the negative control uses it.
func newClusterOCC(occ bool, failWrites float64, seed uint64) *cluster {
	c := &cluster{cs: fake.NewClientset(), rnd: rand.New(rand.NewPCG(seed, 0x1ea5e))}
	// Prepended in reverse: the failure reactor runs first, then the OCC reactor.
	c.cs.PrependReactor("create", "leases", c.occCreate)
	c.occ = occ
	c.cs.PrependReactor("update", "leases", c.occUpdate)
	if failWrites > 0 {
		fail := func(action clienttesting.Action) (bool, runtime.Object, error) {
			if c.rnd.Float64() < failWrites {
				return true, nil, apierrors.NewInternalError(errors.New("injected write failure"))
			}
			return false, nil, nil
		}
		c.cs.PrependReactor("create", "leases", fail)
		c.cs.PrependReactor("update", "leases", fail)
	}
	return c
}

func (c *cluster) occCreate(action clienttesting.Action) (bool, runtime.Object, error) {
	lease := action.(clienttesting.CreateAction).GetObject().(*coordinationv1.Lease).DeepCopy()
	c.mu.Lock()
	defer c.mu.Unlock()
	rv := c.rv + 1
	lease.ResourceVersion = strconv.FormatInt(rv, 10)
	if err := c.cs.Tracker().Create(leasesGVR, lease, lease.Namespace); err != nil {
		return true, nil, err
	}
	c.rv = rv
	c.commits = append(c.commits, commit{at: time.Now(), holder: holderOf(lease), rv: rv})
	return true, lease.DeepCopy(), nil
}

func (c *cluster) occUpdate(action clienttesting.Action) (bool, runtime.Object, error) {
	lease := action.(clienttesting.UpdateAction).GetObject().(*coordinationv1.Lease).DeepCopy()
	ns := action.GetNamespace()
	obj, err := c.cs.Tracker().Get(leasesGVR, ns, lease.Name)
	if err != nil {
		return true, nil, err
	}
	cur := obj.(*coordinationv1.Lease)
	if c.occ && cur.ResourceVersion != lease.ResourceVersion {
		return true, nil, apierrors.NewConflict(leasesGVR.GroupResource(), lease.Name,
			fmt.Errorf("resourceVersion %q is stale, the lease is at %q", lease.ResourceVersion, cur.ResourceVersion))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	rv := c.rv + 1
	lease.ResourceVersion = strconv.FormatInt(rv, 10)
	if err := c.cs.Tracker().Update(leasesGVR, lease, ns); err != nil {
		return true, nil, err
	}
	c.rv = rv
	c.commits = append(c.commits, commit{at: time.Now(), holder: holderOf(lease), prev: holderOf(cur), rv: rv})
	return true, lease.DeepCopy(), nil
}

func holderOf(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// log returns a copy of the commits so far.
func (c *cluster) log() []commit {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]commit(nil), c.commits...)
}

// lastWriteBy is the time of the last commit that named holder, zero if none.
func (c *cluster) lastWriteBy(holder string) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.commits) - 1; i >= 0; i-- {
		if c.commits[i].holder == holder {
			return c.commits[i].at
		}
	}
	return time.Time{}
}

// acquiredAt is the time of the last commit that made holder the holder (its previous
// holder was someone else or nobody), zero if none.
func (c *cluster) acquiredAt(holder string) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.commits) - 1; i >= 0; i-- {
		if cm := c.commits[i]; cm.holder == holder && cm.prev != holder {
			return cm.at
		}
	}
	return time.Time{}
}

// lease reads the stored Lease directly (no injected faults).
func (c *cluster) lease(ctx context.Context, ns, name string) (*coordinationv1.Lease, error) {
	return c.cs.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
}

// netem is one candidate's view of the network to the API server.
type netem struct {
	mu          sync.Mutex
	rnd         *rand.Rand
	maxLatency  time.Duration // each of request and reply waits uniformly in [0, maxLatency]
	lostReply   float64       // probability that a committed write's reply is lost
	writeDelay  time.Duration // extra fixed request delay for writes
	partitioned bool          // every call fails before reaching the server
	// failWrite, when set, fails a write before it reaches the server if it returns true.
	failWrite func(*coordinationv1.Lease) bool
}

func (n *netem) delay() time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.maxLatency <= 0 || n.rnd == nil {
		return 0
	}
	return time.Duration(n.rnd.Int64N(int64(n.maxLatency) + 1))
}

func (n *netem) setPartitioned(p bool) {
	n.mu.Lock()
	n.partitioned = p
	n.mu.Unlock()
}

func (n *netem) setFailWrite(f func(*coordinationv1.Lease) bool) {
	n.mu.Lock()
	n.failWrite = f
	n.mu.Unlock()
}

var errPartitioned = errors.New("injected partition: connection refused")

// call runs one API call through the network: a request delay, the call (unless
// partitioned), a reply delay, possibly a lost reply. A ctx that ends during a delay fails
// the call — after the reply delay the write has already been applied, as with a client
// timing out on a real server.
func call[T any](ctx context.Context, n *netem, write *coordinationv1.Lease, do func() (T, error)) (T, error) {
	var zero T
	d := n.delay()
	if write != nil {
		d += n.writeDelay
	}
	if err := netfault.Sleep(ctx, d); err != nil {
		return zero, err
	}
	n.mu.Lock()
	partitioned, failWrite, lost := n.partitioned, n.failWrite, false
	if write != nil && n.rnd != nil {
		lost = n.rnd.Float64() < n.lostReply
	}
	n.mu.Unlock()
	if partitioned {
		return zero, errPartitioned
	}
	if write != nil && failWrite != nil && failWrite(write) {
		return zero, apierrors.NewServiceUnavailable("injected write failure for " + holderOf(write))
	}
	v, _, err := netfault.Reply(ctx, n.delay, lost, do)
	return v, err
}

// client returns a clientset for one candidate whose Lease calls go through n.
func (c *cluster) client(n *netem) kubernetes.Interface {
	return candidateClient{Interface: c.cs, n: n}
}

type candidateClient struct {
	kubernetes.Interface
	n *netem
}

func (c candidateClient) CoordinationV1() coordv1client.CoordinationV1Interface {
	return coordClient{CoordinationV1Interface: c.Interface.CoordinationV1(), n: c.n}
}

type coordClient struct {
	coordv1client.CoordinationV1Interface
	n *netem
}

func (c coordClient) Leases(ns string) coordv1client.LeaseInterface {
	return leaseClient{LeaseInterface: c.CoordinationV1Interface.Leases(ns), n: c.n}
}

type leaseClient struct {
	coordv1client.LeaseInterface
	n *netem
}

func (l leaseClient) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	return call(ctx, l.n, nil, func() (*coordinationv1.Lease, error) { return l.LeaseInterface.Get(ctx, name, opts) })
}

func (l leaseClient) Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	return call(ctx, l.n, lease, func() (*coordinationv1.Lease, error) { return l.LeaseInterface.Create(ctx, lease, opts) })
}

func (l leaseClient) Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	return call(ctx, l.n, lease, func() (*coordinationv1.Lease, error) { return l.LeaseInterface.Update(ctx, lease, opts) })
}

// assertTakeoversJustified checks the election's safety rule on a commit log: a candidate
// may take the Lease from another holder only after that holder wrote nothing for at least
// leaseDuration, unless the holder released it (an empty holder) first.
func assertTakeoversJustified(t testing.TB, log []commit, leaseDuration time.Duration) (takeovers int) {
	t.Helper()
	for i, cm := range log {
		if cm.holder == "" || cm.prev == "" || cm.holder == cm.prev {
			continue
		}
		takeovers++
		var last time.Time
		for j := i - 1; j >= 0; j-- {
			if log[j].holder == cm.prev {
				last = log[j].at
				break
			}
		}
		if gap := cm.at.Sub(last); gap < leaseDuration {
			t.Errorf("%q took the lease from %q %v after its last renewal (rv %d), before the %v lease expired",
				cm.holder, cm.prev, gap, cm.rv, leaseDuration)
		}
	}
	return takeovers
}
