package testkit

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
	"github.com/ctrlkit/ctrlkit/testkit/internal/kubeserver"
)

// FakeOptions configures NewFakeWithOptions. The zero value is what NewFake uses.
type FakeOptions struct {
	// Objects seed the fake cluster, stamped as if they had been created (UID, resourceVersion,
	// generation). Typed objects of client-go's scheme (Pods, ConfigMaps, ...) and
	// *unstructured.Unstructured objects (custom resources, or built-in kinds) go into the one
	// store both Client and Dynamic read. An unstructured object of an undeclared kind declares
	// it (see fakecluster.Options.Objects).
	Objects []runtime.Object

	// Resources declares custom resources the fake serves, as their CRDs would (GVR, kind,
	// scope, status subresource), so they can be listed, watched and written before any object
	// of theirs exists. A request for a resource neither built in, declared nor seeded fails
	// with fakecluster.ErrUndeclaredResource.
	Resources []fakecluster.Resource

	// CRDs are CustomResourceDefinition manifests (YAML or JSON, such as an embedded crd.yaml)
	// the fake serves, schema included: writes are pruned, defaulted and validated by each
	// version's structural schema as kube-apiserver does (see fakecluster.Options.CRDs).
	CRDs [][]byte

	// Seed seeds the random source of FailWrites. Zero derives it from the test's name, so a test
	// fails the same requests on every run and two tests do not fail the same pattern.
	Seed uint64
}

// ErrInjected is matched (errors.Is) by every error FailWrites injects. The error is also an
// API status error (apierrors.IsInternalError reports true), as a real server's would be.
var ErrInjected = errors.New("injected failure")

// DefaultWriteVerbs are the verbs FailWrites fails when given none.
var DefaultWriteVerbs = []string{"create", "update", "patch", "delete"}

// FakeEnv is an Env on an in-memory cluster (package fakecluster) with the controls only a fake
// has: FailWrites, Delay, Injected, Actions and ClearActions, and the cluster itself. Pass its
// Env to code that works on a real API server too.
type FakeEnv struct {
	*Env
	cluster *fakecluster.Cluster
	faults  *faults
}

// NewFake returns a FakeEnv on an in-memory cluster seeded with objs that writes like an API
// server (package fakecluster: generated names, UIDs, a new resourceVersion on every write with
// Conflict on a stale one, status subresources, watches that resume from a list), for built-in
// kinds and custom resources alike. Its informer factory is started (informers requested later
// start at once; call Sync to wait for them) and everything stops in t.Cleanup. A seed object the
// cluster cannot store (two with the same name, a typed kind outside client-go's scheme) fails
// the test.
func NewFake(t testing.TB, objs ...runtime.Object) *FakeEnv {
	t.Helper()
	return NewFakeWithOptions(t, FakeOptions{Objects: objs})
}

// NewFakeWithOptions is NewFake with custom-resource declarations and a FailWrites seed.
func NewFakeWithOptions(t testing.TB, opts FakeOptions) *FakeEnv {
	t.Helper()
	cluster, err := fakecluster.NewWithOptions(fakecluster.Options{Objects: opts.Objects, Resources: opts.Resources, CRDs: opts.CRDs,
		// Writes naming no field manager are recorded as the API server Env's are.
		DefaultFieldManager: kubeserver.UserAgent})
	if err != nil {
		t.Fatalf("testkit: %v", err)
		return nil
	}
	cs := cluster.Clientset()
	e := &FakeEnv{Env: newEnv(t, cs, cluster.Dynamic(), cluster.Metadata()), cluster: cluster}
	e.namespace = metav1.NamespaceDefault

	seed := opts.Seed
	if seed == 0 {
		h := fnv.New64a()
		h.Write([]byte(t.Name()))
		seed = h.Sum64()
	}
	e.faults = &faults{ctx: e.ctx, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	// Prepended, so faults are decided before the cluster serves the request, for the typed and
	// the dynamic client alike (both send their requests through this chain). Reactors the test
	// adds later run before these.
	cs.PrependReactor("*", "*", e.faults.react)
	cs.PrependWatchReactor("*", e.faults.reactWatch)

	e.factory.Start(e.ctx)
	e.Sync()
	return e
}

// Cluster is the in-memory cluster behind Client and Dynamic: its Clientset for PrependReactor
// and PrependWatchReactor, its Tracker for the stored objects.
func (e *FakeEnv) Cluster() *fakecluster.Cluster { return e.cluster }

// Actions returns the requests the fake received through Client and Dynamic, oldest first
// (requests that FailWrites failed included).
func (e *FakeEnv) Actions() []clienttesting.Action { return e.cluster.Actions() }

// ClearActions forgets the recorded requests, so a test can assert on what happens next only.
func (e *FakeEnv) ClearActions() { e.cluster.ClearActions() }

// FailWrites makes percent of the fake's requests with one of verbs (DefaultWriteVerbs when none
// are given) fail with an internal server error matching ErrInjected, until the next FailWrites
// call replaces the setting; FailWrites(0) stops failing. Which requests fail is decided by a
// seeded random source (see FakeOptions.Seed), so a test whose requests come in a fixed order
// fails the same ones on every run. Dynamic requests (custom resources) fail alike. Failed
// requests are still recorded in Actions.
func (e *FakeEnv) FailWrites(percent int, verbs ...string) {
	e.t.Helper()
	if percent < 0 || percent > 100 {
		e.t.Fatalf("testkit: FailWrites: percent %d is outside 0..100", percent)
		return
	}
	if len(verbs) == 0 {
		verbs = DefaultWriteVerbs
	}
	set := make(map[string]bool, len(verbs))
	for _, v := range verbs {
		set[strings.ToLower(v)] = true
	}
	e.faults.mu.Lock()
	e.faults.percent, e.faults.verbs = percent, set
	e.faults.mu.Unlock()
}

// Delay adds d of latency to every request of the fake, typed or dynamic (watches included),
// until the next Delay call; Delay(0) removes it. Reactors run under the fake clientset's lock, so delayed requests
// are served one at a time: n concurrent requests take about n×d, as on a server with a single
// worker. That makes Delay good for exposing code that assumes requests are instant (a cache
// read racing a write), not for measuring throughput. A request waiting out its delay gives up
// when the test's context ends.
func (e *FakeEnv) Delay(d time.Duration) {
	e.t.Helper()
	if d < 0 {
		e.t.Fatalf("testkit: Delay: negative latency %v", d)
		return
	}
	e.faults.mu.Lock()
	e.faults.delay = d
	e.faults.mu.Unlock()
}

// faults is the fake's fault-injection state, consulted by its reactors.
type faults struct {
	ctx context.Context

	mu       sync.Mutex
	rng      *rand.Rand
	percent  int
	verbs    map[string]bool
	delay    time.Duration
	injected int
}

func (f *faults) react(action clienttesting.Action) (bool, runtime.Object, error) {
	f.sleep()
	f.mu.Lock()
	// Draw only for matching verbs so the pattern over writes does not depend on how many
	// reads (informer lists, cache misses) happened in between.
	fail := f.percent > 0 && f.verbs[action.GetVerb()] && f.rng.IntN(100) < f.percent
	if fail {
		f.injected++
	}
	f.mu.Unlock()
	if !fail {
		return false, nil, nil
	}
	return true, nil, injected(action)
}

func (f *faults) reactWatch(clienttesting.Action) (bool, watch.Interface, error) {
	f.sleep()
	return false, nil, nil
}

func (f *faults) sleep() {
	f.mu.Lock()
	d := f.delay
	f.mu.Unlock()
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-f.ctx.Done():
	}
}

// injectedError is an API status error (so apierrors helpers classify it as a server error)
// that also matches ErrInjected.
type injectedError struct{ *apierrors.StatusError }

func (e *injectedError) Is(target error) bool { return target == ErrInjected }

func injected(action clienttesting.Action) error {
	res := action.GetResource()
	what := res.Resource
	if res.Group != "" {
		what += "." + res.Group
	}
	if sub := action.GetSubresource(); sub != "" {
		what += "/" + sub
	}
	if n, ok := action.(interface{ GetName() string }); ok && n.GetName() != "" {
		what += " " + n.GetName()
	}
	return &injectedError{apierrors.NewInternalError(fmt.Errorf("testkit: %w of %s %s", ErrInjected, action.GetVerb(), what))}
}

// Injected is how many requests FailWrites has failed so far, for asserting that a controller
// really went through failures (and retried) rather than getting lucky.
func (e *FakeEnv) Injected() int {
	e.faults.mu.Lock()
	defer e.faults.mu.Unlock()
	return e.faults.injected
}
