package controllertest

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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/controller/controllertest/memcluster"
)

// FakeOptions configures NewFakeWithOptions. The zero value is what NewFake uses.
type FakeOptions struct {
	// Objects seed the fake. Typed objects of client-go's scheme (Pods, ConfigMaps, ...) go into
	// the typed clientset; *unstructured.Unstructured objects go into the dynamic fake, whose
	// list kinds are registered from them.
	Objects []runtime.Object

	// ListKinds maps a custom resource to its list kind ("WidgetList") so the dynamic fake can
	// List and Watch a resource that no seed object introduced. Kinds must end in "List".
	ListKinds map[schema.GroupVersionResource]string

	// Seed seeds the random source of FailWrites. Zero derives it from the test's name, so a test
	// fails the same requests on every run and two tests do not fail the same pattern.
	Seed uint64

	// PlainFake leaves the typed clientset as client-go's fake serves it. By default the Env's
	// clientset writes like an API server (package memcluster: generated names, UIDs, a new
	// resourceVersion on every write with Conflict on a stale one, a status subresource, watch
	// events that share no memory with the store, seed objects stamped as if created). Without
	// that, an update keeps its resourceVersion and looks like a resync, which every handler
	// that skips resyncs (informer.WithoutResync, EnqueueControllerOf) drops.
	PlainFake bool
}

// ErrInjected is matched (errors.Is) by every error FailWrites injects. The error is also an
// API status error (apierrors.IsInternalError reports true), as a real server's would be.
var ErrInjected = errors.New("injected failure")

// DefaultWriteVerbs are the verbs FailWrites fails when given none.
var DefaultWriteVerbs = []string{"create", "update", "patch", "delete"}

// NewFake returns an Env on an in-memory kubernetes/fake clientset seeded with objs, writing
// like an API server (see FakeOptions.PlainFake and package memcluster). Its informer factory is started (informers requested later start at once; call Sync to wait for
// them) and everything stops in t.Cleanup. A seed object the fake cannot store (two with the
// same name, a kind outside client-go's scheme) fails the test.
func NewFake(t testing.TB, objs ...runtime.Object) *Env {
	t.Helper()
	return NewFakeWithOptions(t, FakeOptions{Objects: objs})
}

// NewFakeWithOptions is NewFake with custom-resource list kinds and a FailWrites seed.
func NewFakeWithOptions(t testing.TB, opts FakeOptions) *Env {
	t.Helper()
	var typed, unstructuredObjs []runtime.Object
	for i, obj := range opts.Objects {
		switch o := obj.(type) {
		case nil:
			t.Fatalf("controllertest: seed object %d is nil", i)
		case *unstructured.Unstructured:
			unstructuredObjs = append(unstructuredObjs, o)
		default:
			typed = append(typed, o)
		}
	}

	var cs *fake.Clientset
	if opts.PlainFake {
		cs = fake.NewClientset()
		for _, obj := range typed {
			if err := cs.Tracker().Add(obj); err != nil {
				t.Fatalf("controllertest: seed %s: %v", describe(obj), err)
			}
		}
	} else {
		var err error
		if cs, err = memcluster.New(typed...); err != nil {
			t.Fatalf("controllertest: %v", err)
		}
	}

	dyn, err := newFakeDynamic(opts.ListKinds, unstructuredObjs)
	if err != nil {
		t.Fatalf("controllertest: %v", err)
	}

	e := newEnv(t, cs, dyn)
	e.fake, e.fakeDynamic = cs, dyn
	e.namespace = metav1.NamespaceDefault

	seed := opts.Seed
	if seed == 0 {
		h := fnv.New64a()
		h.Write([]byte(t.Name()))
		seed = h.Sum64()
	}
	e.faults = &faults{ctx: e.ctx, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	// Prepended, so faults are decided before the tracker serves the request. Reactors added
	// by the test later run before these.
	cs.PrependReactor("*", "*", e.faults.react)
	cs.PrependWatchReactor("*", e.faults.reactWatch)

	e.factory.Start(e.ctx)
	e.Sync()
	return e
}

// newFakeDynamic builds a fake dynamic client that knows client-go's kinds (as unstructured) plus
// the kinds of the seed objects and listKinds. It is assembled by hand because the fake's own
// constructors panic on bad input.
func newFakeDynamic(listKinds map[schema.GroupVersionResource]string, objs []runtime.Object) (*dynamicfake.FakeDynamicClient, error) {
	s := runtime.NewScheme()
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if strings.HasSuffix(gvk.Kind, "List") {
			s.AddKnownTypeWithName(gvk, &unstructured.UnstructuredList{})
		} else {
			s.AddKnownTypeWithName(gvk, &unstructured.Unstructured{})
		}
	}
	for gvr, kind := range listKinds {
		if !strings.HasSuffix(kind, "List") || len(kind) == len("List") {
			return nil, fmt.Errorf("list kind %q for %s must be <Kind>List", kind, gvr)
		}
	}
	for _, obj := range objs {
		gvk := obj.GetObjectKind().GroupVersionKind()
		if gvk.Kind == "" || gvk.Version == "" {
			return nil, fmt.Errorf("seed %s: unstructured object needs apiVersion and kind", describe(obj))
		}
		if !s.Recognizes(gvk) {
			s.AddKnownTypeWithName(gvk, &unstructured.Unstructured{})
		}
		listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
		if !s.Recognizes(listGVK) {
			s.AddKnownTypeWithName(listGVK, &unstructured.UnstructuredList{})
		}
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(s, listKinds)
	for _, obj := range objs {
		if err := dyn.Tracker().Add(obj); err != nil {
			return nil, fmt.Errorf("seed %s: %w", describe(obj), err)
		}
	}
	return dyn, nil
}

// describe names an object in error messages: kind namespace/name.
func describe(obj runtime.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		if gvks, _, err := scheme.Scheme.ObjectKinds(obj); err == nil && len(gvks) > 0 {
			kind = gvks[0].Kind
		} else {
			kind = fmt.Sprintf("%T", obj)
		}
	}
	if m, ok := obj.(metav1.Object); ok {
		if m.GetNamespace() != "" {
			return fmt.Sprintf("%s %s/%s", kind, m.GetNamespace(), m.GetName())
		}
		return fmt.Sprintf("%s %s", kind, m.GetName())
	}
	return kind
}

// FailWrites makes percent of the fake's requests with one of verbs (DefaultWriteVerbs when none
// are given) fail with an internal server error matching ErrInjected, until the next FailWrites
// call replaces the setting; FailWrites(0) stops failing. Which requests fail is decided by a
// seeded random source (see FakeOptions.Seed), so a test whose requests come in a fixed order
// fails the same ones on every run. Failed requests are still recorded in Actions. Only for
// NewFake: on an API server Env it fails the test.
func (e *Env) FailWrites(percent int, verbs ...string) {
	e.t.Helper()
	if e.faults == nil {
		e.t.Fatalf("controllertest: FailWrites: %v", errNotFake)
		return
	}
	if percent < 0 || percent > 100 {
		e.t.Fatalf("controllertest: FailWrites: percent %d is outside 0..100", percent)
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

// Delay adds d of latency to every request of the fake (watches included) until the next Delay
// call; Delay(0) removes it. Reactors run under the fake clientset's lock, so delayed requests
// are served one at a time: n concurrent requests take about n×d, as on a server with a single
// worker. That makes Delay good for exposing code that assumes requests are instant (a cache
// read racing a write), not for measuring throughput. A request waiting out its delay gives up
// when the test's context ends.
func (e *Env) Delay(d time.Duration) {
	e.t.Helper()
	if e.faults == nil {
		e.t.Fatalf("controllertest: Delay: %v", errNotFake)
		return
	}
	if d < 0 {
		e.t.Fatalf("controllertest: Delay: negative latency %v", d)
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
	return &injectedError{apierrors.NewInternalError(fmt.Errorf("controllertest: %w of %s %s", ErrInjected, action.GetVerb(), what))}
}

// Injected is how many requests FailWrites has failed so far, for asserting that a controller
// really went through failures (and retried) rather than getting lucky. Only for NewFake.
func (e *Env) Injected() int {
	e.t.Helper()
	if e.faults == nil {
		e.t.Fatalf("controllertest: Injected: %v", errNotFake)
		return 0
	}
	e.faults.mu.Lock()
	defer e.faults.mu.Unlock()
	return e.faults.injected
}
