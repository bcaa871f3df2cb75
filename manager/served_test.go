package manager_test

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/testkit"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

var gadgetGVR = schema.GroupVersionResource{Group: "served.ctrlkit.dev", Version: "v1", Resource: "gadgets"}

func gadgetCRD() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gadgets.served.ctrlkit.dev"},
		"spec": map[string]any{
			"group": "served.ctrlkit.dev", "scope": "Namespaced",
			"names": map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			}},
		},
	}}
}

func gadget(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "served.ctrlkit.dev/v1", "kind": "Gadget",
		"metadata": map[string]any{"namespace": ns, "name": name},
	}}
}

// servedFixture is a Manager over the fake cluster with one WhenServed
// controller of gadgets, recording what it reconciles and how many terms it had.
type servedFixture struct {
	t     *testing.T
	env   *testkit.FakeEnv
	mgr   *manager.Manager
	rec   *testkit.Recorder[controller.Key]
	terms chan *controller.Controller[controller.Key]
}

func newServedFixture(t *testing.T, cache informer.Options) *servedFixture {
	t.Helper()
	env := testkit.NewFake(t)
	mgr, err := manager.New(manager.Options{Client: env.Client(), Dynamic: env.Dynamic(), Cache: cache})
	require.NoError(t, err)
	x := &servedFixture{t: t, env: env, mgr: mgr, rec: &testkit.Recorder[controller.Key]{}, terms: make(chan *controller.Controller[controller.Key], 200)}
	require.NoError(t, mgr.AddWhenServed(manager.WhenServed{
		Name:      "gadgets",
		Resources: []schema.GroupVersionResource{gadgetGVR},
		Build: func(ctx context.Context, f *informer.Factory) (manager.Runnable, error) {
			gadgets, err := informer.ForResource[*unstructured.Unstructured](f, gadgetGVR)
			if err != nil {
				return nil, err
			}
			c, err := controller.New[controller.Key]("gadgets", x.rec, controller.Options[controller.Key]{})
			if err != nil {
				return nil, err
			}
			if err := controller.Watch(c, gadgets, controller.EnqueueObject); err != nil {
				return nil, err
			}
			x.terms <- c
			return c, nil
		},
	}))
	return x
}

func (x *servedFixture) start() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- x.mgr.Start(ctx) }()
	x.t.Cleanup(func() {
		cancel()
		require.NoError(x.t, <-done)
	})
}

func (x *servedFixture) crds() dynamic.ResourceInterface {
	return x.env.Dynamic().Resource(fakecluster.CRDResource)
}

func (x *servedFixture) readyz() string {
	_, body := probe(x.mgr.ReadyzHandler())
	return body
}

func (x *servedFixture) waitReadyz(what string, ok func(code int, body string) bool) {
	x.t.Helper()
	waitUntil(x.t, 10*time.Second, func() bool { return ok(probe(x.mgr.ReadyzHandler())) }, what)
}

func TestWhenServedWaitsForItsCRDStopsWhenItGoesAndStartsWhenItReturns(t *testing.T) {
	x := newServedFixture(t, informer.Options{})
	ctx := x.env.Context()
	x.start()

	x.waitReadyz("/readyz names the missing CRD", func(code int, body string) bool {
		return code == http.StatusServiceUnavailable &&
			strings.Contains(body, "gadgets (waiting for gadgets.served.ctrlkit.dev/v1: no CRD gadgets.served.ctrlkit.dev and not served)")
	})
	code, _ := probe(x.mgr.HealthzHandler())
	assert.Equal(t, http.StatusOK, code, "healthy while waiting")

	for term := 1; term <= 2; term++ {
		_, err := x.crds().Create(ctx, gadgetCRD(), metav1.CreateOptions{})
		require.NoError(t, err)
		x.waitReadyz("ready once the CRD is served", func(code int, _ string) bool { return code == http.StatusOK })
		name := "g" + string(rune('0'+term))
		_, err = x.env.Dynamic().Resource(gadgetGVR).Namespace("ns").Create(ctx, gadget("ns", name), metav1.CreateOptions{})
		require.NoError(t, err)
		waitUntil(t, 10*time.Second, func() bool { return x.rec.Count(controller.Key{Namespace: "ns", Name: name}) > 0 }, "the gadget is reconciled")

		require.NoError(t, x.crds().Delete(ctx, "gadgets.served.ctrlkit.dev", metav1.DeleteOptions{}))
		x.waitReadyz("not ready again once the CRD is gone", func(code int, body string) bool {
			return code == http.StatusServiceUnavailable && strings.Contains(body, "gadgets (waiting for gadgets.served.ctrlkit.dev/v1: CRD gadgets.served.ctrlkit.dev was deleted)")
		})
		code, _ := probe(x.mgr.HealthzHandler())
		assert.Equal(t, http.StatusOK, code, "healthy without the CRD")
		// The stopped term's series are left as a stopped controller leaves them.
		assert.Equal(t, 0.0, x.metric("controller_runtime_active_workers", "controller", "gadgets"))
		assert.Equal(t, 0.0, x.metric("workqueue_depth", "name", "gadgets"))
		// Counters go on across terms: one success per gadget and term so far.
		assert.GreaterOrEqual(t, x.metric("controller_runtime_reconcile_total", "controller", "gadgets", "result", "success"), float64(term))
	}
	assert.Len(t, x.terms, 2, "built once per term")
}

// metric returns the value of the counter or gauge name whose labels
// include the given name/value pairs; the test fails without one.
func (x *servedFixture) metric(name string, labels ...string) float64 {
	x.t.Helper()
	mfs, err := x.mgr.Gatherer().Gather()
	require.NoError(x.t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue series
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	x.t.Fatalf("no series %s%v", name, labels)
	return 0
}

// A controller waiting for its CRD, started and stopped a hundred times,
// leaves no goroutine behind: none of its terms' (controllers, informers,
// watches) outlives the term (a leak of one per term would show 100), and
// TestMain's goleak checks the rest once the Manager stopped.
func TestWhenServedHundredTerms(t *testing.T) {
	x := newServedFixture(t, informer.Options{ReleaseGrace: -1})
	ctx := x.env.Context()
	x.start()
	before := -1
	for i := range 101 {
		if i == 1 {
			// After one whole term, whatever lives across terms (the CRD's watch) runs.
			before = runtime.NumGoroutine()
		}
		_, err := x.crds().Create(ctx, gadgetCRD(), metav1.CreateOptions{})
		require.NoError(t, err)
		x.waitReadyz("ready", func(code int, _ string) bool { return code == http.StatusOK })
		require.NoError(t, x.crds().Delete(ctx, "gadgets.served.ctrlkit.dev", metav1.DeleteOptions{}))
		x.waitReadyz("waiting", func(code int, body string) bool {
			return code == http.StatusServiceUnavailable && strings.Contains(body, "waiting for")
		})
		_, err = x.crds().Get(ctx, "gadgets.served.ctrlkit.dev", metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err), "term %d", i)
	}
	assert.Len(t, x.terms, 101)
	// A count, not goleak against a snapshot: the CRD watch, which lives
	// across terms, may be re-established (a new goroutine for an old one).
	waitUntil(t, 10*time.Second, func() bool { return runtime.NumGoroutine() <= before },
		"the goroutines of 100 terms are gone")
}

func TestAddWhenServedRefusesBadOptions(t *testing.T) {
	env := testkit.NewFake(t)
	mgr, err := manager.New(manager.Options{Client: env.Client(), Dynamic: env.Dynamic()})
	require.NoError(t, err)
	build := func(context.Context, *informer.Factory) (manager.Runnable, error) { return nil, nil }
	for _, w := range []manager.WhenServed{
		{Resources: []schema.GroupVersionResource{gadgetGVR}, Build: build},
		{Name: "a", Build: build},
		{Name: "a", Resources: []schema.GroupVersionResource{gadgetGVR}},
		{Name: "a", Resources: []schema.GroupVersionResource{{Resource: "gadgets"}}, Build: build},
		{Name: "a", Resources: []schema.GroupVersionResource{gadgetGVR}, Build: build, RecheckInterval: -1},
	} {
		assert.ErrorIs(t, mgr.AddWhenServed(w), manager.ErrInvalidOptions)
	}
	noDynamic, err := manager.New(manager.Options{Client: env.Client()})
	require.NoError(t, err)
	assert.ErrorContains(t, noDynamic.AddWhenServed(manager.WhenServed{Name: "a", Resources: []schema.GroupVersionResource{gadgetGVR}, Build: build}), "dynamic client")
}

// A Runnable that returns on its own while its resources are served is
// built again after the recheck interval, not at once.
func TestWhenServedRunnableReturningOnItsOwn(t *testing.T) {
	env := testkit.NewFake(t)
	mgr, err := manager.New(manager.Options{Client: env.Client(), Dynamic: env.Dynamic()})
	require.NoError(t, err)
	builds := make(chan struct{}, 10)
	require.NoError(t, mgr.AddWhenServed(manager.WhenServed{
		Name:            "quitter",
		Resources:       []schema.GroupVersionResource{gadgetGVR},
		RecheckInterval: time.Hour,
		Build: func(context.Context, *informer.Factory) (manager.Runnable, error) {
			builds <- struct{}{}
			return runnableFunc{name: "quitter", run: func(context.Context) error { return nil }}, nil
		},
	}))
	x := &servedFixture{t: t, env: env, mgr: mgr}
	_, err = x.crds().Create(env.Context(), gadgetCRD(), metav1.CreateOptions{})
	require.NoError(t, err)
	x.start()
	<-builds
	// With an hour to wait, no second build comes.
	waitUntil(t, 10*time.Second, func() bool {
		_, body := probe(mgr.ReadyzHandler())
		return strings.Contains(body, "quitter (the controller returned; building it again)")
	}, "readyz says it waits to build it again")
	assert.Empty(t, builds)
}

type runnableFunc struct {
	name string
	run  func(context.Context) error
}

func (r runnableFunc) Name() string                  { return r.name }
func (r runnableFunc) Run(ctx context.Context) error { return r.run(ctx) }

// A Runnable that fails while its resources are served is fatal, as for Add:
// Start returns its error, naming it.
func TestWhenServedRunnableFailingIsFatal(t *testing.T) {
	env := testkit.NewFake(t)
	mgr, err := manager.New(manager.Options{Client: env.Client(), Dynamic: env.Dynamic()})
	require.NoError(t, err)
	require.NoError(t, mgr.AddWhenServed(manager.WhenServed{
		Name:      "failing",
		Resources: []schema.GroupVersionResource{gadgetGVR},
		Build: func(context.Context, *informer.Factory) (manager.Runnable, error) {
			return runnableFunc{name: "failing", run: func(context.Context) error { return errors.New("boom") }}, nil
		},
	}))
	_, err = env.Dynamic().Resource(fakecluster.CRDResource).Create(env.Context(), gadgetCRD(), metav1.CreateOptions{})
	require.NoError(t, err)
	err = mgr.Start(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `controller "failing": failing: boom`)
}
