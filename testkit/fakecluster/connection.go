package fakecluster

import (
	"errors"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/metadata"
	clienttesting "k8s.io/client-go/testing"
)

// Snapshot is the cluster's objects at one resourceVersion. Taking one copies no object: stored
// objects are never modified in place.
type Snapshot struct {
	rv      int64
	objects map[schema.GroupVersionResource]map[types.NamespacedName]runtime.Object
}

// ResourceVersion is the snapshot's resourceVersion: the cluster's last write when it was taken.
func (s *Snapshot) ResourceVersion() string { return strconv.FormatInt(s.rv, 10) }

// Objects returns the snapshot's objects of every resource, keyed by resource.
func (s *Snapshot) Objects() map[schema.GroupVersionResource][]runtime.Object {
	out := make(map[schema.GroupVersionResource][]runtime.Object, len(s.objects))
	for gvr, objs := range s.objects {
		if len(objs) == 0 {
			continue
		}
		list := make([]runtime.Object, 0, len(objs))
		for _, o := range objs {
			list = append(list, o)
		}
		sortObjects(list)
		out[gvr] = list
	}
	return out
}

// Snapshot returns the cluster as it is now.
func (c *Cluster) Snapshot() *Snapshot {
	c.store.mu.Lock()
	defer c.store.mu.Unlock()
	snap := &Snapshot{rv: c.store.rv, objects: make(map[schema.GroupVersionResource]map[types.NamespacedName]runtime.Object, len(c.store.objects))}
	for gvr, objs := range c.store.objects {
		m := make(map[types.NamespacedName]runtime.Object, len(objs))
		for k, o := range objs {
			m[k] = o
		}
		snap.objects[gvr] = m
	}
	return snap
}

// Connection is one client's way into the cluster (a process's, in a simulation), with typed,
// dynamic and metadata front ends of its own: reactors prepended to its Clientset (faults) see
// its requests only, its Clientset's Actions are its requests only, and its reads can lag the
// cluster (Lag) as through a kube-apiserver whose watch cache is behind etcd.
type Connection struct {
	c   *Cluster
	cs  *fake.Clientset
	dyn *dynamicClient

	mu        sync.Mutex
	lagging   *lagState // nil: reads see the cluster as it is
	observers []func(clienttesting.Action, runtime.Object, error)
	latency   time.Duration
	intercept func(schema.GroupVersionResource, watch.Interface) watch.Interface
}

// Observe calls f with every request the connection's cluster served (after the reactors
// prepended to Clientset, which may answer first) and its answer, before the cluster serves
// any other connection's next request: the observers of all connections see the requests in
// the order the cluster served them. f runs under the Clientset's lock, as reactors do: it
// must not send requests of its own or block.
func (cn *Connection) Observe(f func(action clienttesting.Action, obj runtime.Object, err error)) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	cn.observers = append(cn.observers, f)
}

// SetLatency makes every request the connection's cluster serves take d more before its
// answer reaches the client, with the Clientset's lock released meanwhile (client-go's fake
// holds it for the whole request), so that other requests proceed; and spaces the events of
// its watches (after InterceptWatches) at least d apart, as writes are. In a testing/synctest
// bubble d is virtual and the bubble runs everything it can before the answer comes (or the
// next event): what a write sets off (watch events, informer handlers) is done before the
// writer goes on, so a simulation's runs do not depend on how the Go scheduler interleaves
// them.
func (cn *Connection) SetLatency(d time.Duration) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	cn.latency = d
}

// InterceptWatches passes every watch the connection opens from now on through f, which may
// return another watch in its place (one that holds, merges or ends events: a simulation's
// faults). f must stop the watch it was given when its own is stopped.
func (cn *Connection) InterceptWatches(f func(gvr schema.GroupVersionResource, w watch.Interface) watch.Interface) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	cn.intercept = f
}

// Connect returns a new Connection to the cluster.
func (c *Cluster) Connect() *Connection {
	cn := &Connection{c: c}
	cn.cs = frontEnd(cn.react, cn.reactWatch)
	cn.dyn = &dynamicClient{c: c, cs: cn.cs}
	return cn
}

// Clientset is the connection's typed front end, for PrependReactor and Actions.
func (cn *Connection) Clientset() *fake.Clientset { return cn.cs }

// Dynamic is the connection's dynamic front end; its requests pass through Clientset's reactors.
func (cn *Connection) Dynamic() dynamic.Interface { return cn.dyn }

// Metadata is the connection's metadata front end, over Dynamic.
func (cn *Connection) Metadata() metadata.Interface { return metadataClient{d: cn.dyn} }

// Lag makes the connection's cache-served reads see the cluster as it was in snap until they
// catch up (the returned catchUp): lists and gets that name a resourceVersion (an informer's
// first list asks for "0") answer from snap at snap's resourceVersion, and watches deliver
// nothing until then, and then every write since the resourceVersion they asked for, from the
// cluster's history. Quorum reads (no resourceVersion) and every write reach the current
// state, as through a kube-apiserver whose watch cache lags etcd: a controller restarted onto
// it acts on the past (Sieve's stale-state bugs) until the cache catches up.
//
// With resources, only those lag: the others read the current state, as when one resource's
// watch cache falls behind (Sieve's stale-state bugs came from exactly that: the owner seen in
// the past, its children in the present).
//
// catchUp(rs...) ends the lag of the resources rs, and with none of every resource; one at a
// time, a simulation decides in which order the informers see what they missed.
func (cn *Connection) Lag(snap *Snapshot, resources ...schema.GroupVersionResource) (catchUp func(rs ...schema.GroupVersionResource)) {
	lagged := make(map[schema.GroupVersionResource]bool, len(resources))
	for _, r := range resources {
		lagged[r] = true
	}
	l := &lagState{snap: snap, lagged: lagged, caught: map[schema.GroupVersionResource]chan struct{}{}}
	cn.mu.Lock()
	cn.lagging = l
	cn.mu.Unlock()
	return func(rs ...schema.GroupVersionResource) {
		cn.mu.Lock()
		defer cn.mu.Unlock()
		if len(rs) == 0 {
			if cn.lagging == l {
				cn.lagging = nil
			}
			l.all = true
			for gvr, ch := range l.caught {
				close(ch)
				delete(l.caught, gvr)
			}
			return
		}
		for _, gvr := range rs {
			if l.released == nil {
				l.released = map[schema.GroupVersionResource]bool{}
			}
			if !l.released[gvr] {
				l.released[gvr] = true
				if ch, ok := l.caught[gvr]; ok {
					close(ch)
					delete(l.caught, gvr)
				}
			}
		}
	}
}

// lagState is one Lag: what lags, and the channels its held watches wait on. Guarded by the
// connection's mu.
type lagState struct {
	snap     *Snapshot
	lagged   map[schema.GroupVersionResource]bool // the resources that lag; empty: all
	released map[schema.GroupVersionResource]bool // caught up one by one
	all      bool                                 // caught up entirely
	caught   map[schema.GroupVersionResource]chan struct{}
}

// lag returns the snapshot reads of gvr are served from and the channel closed when its lag
// ends, nil when they are current.
func (cn *Connection) lag(gvr schema.GroupVersionResource) (*Snapshot, <-chan struct{}) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	l := cn.lagging
	if l == nil || l.all || l.released[gvr] || (len(l.lagged) > 0 && !l.lagged[gvr]) {
		return nil, nil
	}
	ch, ok := l.caught[gvr]
	if !ok {
		ch = make(chan struct{})
		l.caught[gvr] = ch
	}
	return l.snap, ch
}

func (cn *Connection) react(action clienttesting.Action) (bool, runtime.Object, error) {
	cn.mu.Lock()
	observers, latency := cn.observers, cn.latency
	cn.mu.Unlock()
	// Served and observed as one step, across every connection: observers see the cluster's
	// requests in the order it served them.
	cn.c.serveMu.Lock()
	handled, obj, err := cn.serve(action)
	for _, f := range observers {
		f(action, obj, err)
	}
	cn.c.serveMu.Unlock()
	if latency > 0 {
		// Called from Fake.Invokes, which holds the Clientset's lock until the reaction chain
		// returns: released for the wait, taken again for Invokes to release.
		cn.cs.Unlock()
		time.Sleep(latency)
		cn.cs.Lock()
	}
	return handled, obj, err
}

func (cn *Connection) serve(action clienttesting.Action) (bool, runtime.Object, error) {
	if snap, _ := cn.lag(action.GetResource()); snap != nil {
		switch a := action.(type) {
		case clienttesting.ListActionImpl:
			if a.ListOptions.ResourceVersion != "" {
				if _, _, _, err := cn.c.resolve(action); err != nil {
					return true, nil, err
				}
				obj, err := cn.c.store.listAt(a.GetResource(), a.GetNamespace(), a.ListOptions, snap)
				return true, obj, err
			}
		case clienttesting.GetActionImpl:
			if a.GetSubresource() == "" && a.GetOptions.ResourceVersion != "" {
				if _, _, _, err := cn.c.resolve(action); err != nil {
					return true, nil, err
				}
				obj, ok := snap.objects[a.GetResource()][types.NamespacedName{Namespace: a.GetNamespace(), Name: a.GetName()}]
				if !ok {
					return true, nil, apierrors.NewNotFound(a.GetResource().GroupResource(), a.GetName())
				}
				return true, obj.DeepCopyObject(), nil
			}
		}
	}
	return cn.c.react(action)
}

func (cn *Connection) reactWatch(action clienttesting.Action) (bool, watch.Interface, error) {
	handled, w, err := cn.watch(action)
	cn.mu.Lock()
	f, latency := cn.intercept, cn.latency
	cn.mu.Unlock()
	if f != nil && w != nil {
		w = f(action.GetResource(), w)
	}
	if latency > 0 && w != nil {
		w = newPacedWatch(w, latency)
	}
	return handled, w, err
}

func (cn *Connection) watch(action clienttesting.Action) (bool, watch.Interface, error) {
	snap, caught := cn.lag(action.GetResource())
	if snap == nil {
		return cn.c.reactWatch(action)
	}
	if _, _, _, err := cn.c.resolve(action); err != nil {
		return true, nil, err
	}
	var opts metav1.ListOptions
	if w, ok := action.(clienttesting.WatchActionImpl); ok {
		opts = w.ListOptions
	}
	if opts.ResourceVersion == "" || opts.ResourceVersion == "0" {
		opts.ResourceVersion = snap.ResourceVersion() // "now", for the lagging cache
	}
	return true, newLaggingWatch(cn.c.store, action.GetResource(), action.GetNamespace(), opts, caught), nil
}

// relayWatch is a watch of the connection's own: a goroutine that feeds out (see newLaggingWatch
// and newPacedWatch), stopped and waited for by Stop.
type relayWatch struct {
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
	done chan struct{}
}

// newRelayWatch starts run, which feeds the relay until it returns.
func newRelayWatch(run func(r *relayWatch)) *relayWatch {
	r := &relayWatch{out: make(chan watch.Event), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		defer close(r.out)
		run(r)
	}()
	return r
}

// send delivers ev; false once the relay is stopped.
func (r *relayWatch) send(ev watch.Event) bool {
	select {
	case r.out <- ev:
		return true
	case <-r.stop:
		return false
	}
}

// forward relays inner's events until it ends or the relay stops, each at least pace after the
// one before (none when pace is 0), and stops inner.
func (r *relayWatch) forward(inner watch.Interface, pace time.Duration) {
	defer inner.Stop()
	for {
		select {
		case ev, ok := <-inner.ResultChan():
			if !ok || !r.send(ev) {
				return
			}
			if pace > 0 {
				t := time.NewTimer(pace)
				select {
				case <-t.C:
				case <-r.stop:
					t.Stop()
					return
				}
			}
		case <-r.stop:
			return
		}
	}
}

func (r *relayWatch) ResultChan() <-chan watch.Event { return r.out }

// Stop ends the watch and waits for its goroutine.
func (r *relayWatch) Stop() {
	r.once.Do(func() { close(r.stop) })
	<-r.done
}

// newLaggingWatch is a watch through a lagging cache: nothing until caught is closed, then the
// cluster's watch from the resourceVersion asked for.
func newLaggingWatch(s *store, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions, caught <-chan struct{}) *relayWatch {
	return newRelayWatch(func(r *relayWatch) {
		select {
		case <-caught:
		case <-r.stop:
			return
		}
		inner, err := s.watch(gvr, ns, opts)
		if err != nil {
			// The history no longer reaches back that far: a 410, after which a reflector relists.
			r.send(watch.Event{Type: watch.Error, Object: statusOf(err)})
			return
		}
		r.forward(inner, 0)
	})
}

// newPacedWatch relays inner's events at least pace apart: a burst (a replay after a lag,
// events held and released) reaches the client as writes do, one request's latency apart.
func newPacedWatch(inner watch.Interface, pace time.Duration) *relayWatch {
	return newRelayWatch(func(r *relayWatch) { r.forward(inner, pace) })
}

// statusOf is err as the Status object of a watch's Error event.
func statusOf(err error) *metav1.Status {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		return &s
	}
	return &apierrors.NewInternalError(err).ErrStatus
}
