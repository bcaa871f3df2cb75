package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/directinformer"
)

// defaultServedRecheck is how often a WhenServed runnable asks discovery
// again, for resources no CRD defines (built-in or aggregated APIs), and
// retries a Build that failed.
const defaultServedRecheck = 10 * time.Second

// WhenServed describes a Runnable that runs only while the API resources it
// needs are served: a controller of a custom resource whose CRD may be
// installed after the process starts, removed, and installed again. Add it
// with Manager.AddWhenServed.
type WhenServed struct {
	// Name names it in logs, /readyz and errors; it must be unique in the
	// Manager. Required.
	Name string
	// Resources are what the Runnable needs, each with the version it
	// reads. A resource defined by a CRD (named resource.group) is served
	// while that CRD exists, is Established, is not being deleted and
	// serves the version; any other resource while discovery lists it.
	// Required.
	Resources []schema.GroupVersionResource
	// Build makes the Runnable for one term: from the moment every resource
	// is served to the moment one is not any more (or the Manager stops).
	// ctx ends with the term; f is the Manager's factory held until then
	// (informer.Factory.HeldUntil), so the informers only this term used
	// stop after it. Build runs again for each term, so everything it makes
	// (queue, expectations, fences) starts afresh. A Build error is logged
	// and retried every RecheckInterval; /readyz names it meanwhile.
	// Required.
	Build func(ctx context.Context, f *informer.Factory) (Runnable, error)
	// NeedLeaderElection says whether it runs only on the leader; nil
	// means true, as for controllers.
	NeedLeaderElection *bool
	// RecheckInterval is how often discovery is asked again and a failed
	// Build retried; 0 means 10 s. CRD changes are seen at
	// once, through a watch.
	RecheckInterval time.Duration
}

// AddWhenServed adds a Runnable that the Manager starts when every resource
// in w.Resources is served, stops (draining its in-flight work) when one is
// not any more, and starts again, newly built, when it is back. While it
// waits, the process stays up and healthy, and /readyz answers 503 naming
// the Runnable and what it waits for (the Runnable counts as a controller
// that has not synced; standbys, which do not run it, stay ready).
//
// It watches the CRDs of w.Resources, each by name (RBAC: get, list and
// watch on those customresourcedefinitions; resourceNames may restrict them
// to the names), and asks discovery for the others. It needs the Manager's
// dynamic client (Options.Dynamic, or Options.Config). Like Add, it may be
// called before or after Start, and Remove stops it (and its term).
func (m *Manager) AddWhenServed(w WhenServed) error {
	bad := func(reason string) error {
		return &OptionsError{Runnable: w.Name, Field: "WhenServed", Reason: reason}
	}
	switch {
	case w.Name == "":
		return bad("Name is empty")
	case len(w.Resources) == 0:
		return bad("Resources is empty")
	case w.Build == nil:
		return bad("Build is nil")
	case w.RecheckInterval < 0:
		return bad(fmt.Sprintf("RecheckInterval %v is negative", w.RecheckInterval))
	case m.dynamic == nil:
		return bad("the Manager has no dynamic client (Options.Dynamic) to watch CRDs with")
	}
	for _, gvr := range w.Resources {
		if gvr.Version == "" || gvr.Resource == "" {
			return bad(fmt.Sprintf("resource %q needs a version and a resource", gvr.String()))
		}
	}
	if w.RecheckInterval == 0 {
		w.RecheckInterval = defaultServedRecheck
	}
	return m.Add(&servedRunnable{m: m, w: w})
}

// servedRunnable runs WhenServed's terms.
type servedRunnable struct {
	m *Manager
	w WhenServed

	// crdSeen: the resources (by CRD name) a CRD was seen to define in
	// this Run. Only Run's goroutine uses it.
	crdSeen map[string]bool

	mu      sync.Mutex
	waiting string   // why no term runs ("" while one does)
	current Runnable // the running term's Runnable; nil between terms
}

func (s *servedRunnable) Name() string { return s.w.Name }

func (s *servedRunnable) NeedLeaderElection() bool {
	return s.w.NeedLeaderElection == nil || *s.w.NeedLeaderElection
}

// Restartable: each Run builds its terms afresh.
func (s *servedRunnable) Restartable() bool { return true }

// HasSynced reports whether a term runs and its Runnable (when it tells)
// has synced.
func (s *servedRunnable) HasSynced() bool {
	s.mu.Lock()
	r := s.current
	s.mu.Unlock()
	if r == nil {
		return false
	}
	if h, ok := r.(interface{ HasSynced() bool }); ok {
		return h.HasSynced()
	}
	return true
}

// waitingFor says what /readyz names while no term runs.
func (s *servedRunnable) waitingFor() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting
}

func (s *servedRunnable) setState(waiting string, r Runnable) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting, s.current = waiting, r
}

// term is one run of the built Runnable.
type term struct {
	r      Runnable
	cancel context.CancelFunc
	done   chan error
}

// stop ends the term and waits for its Runnable to return.
func (t *term) stop() error {
	t.cancel()
	return <-t.done
}

// Run watches the resources and runs a term while they are served, until
// ctx ends. It returns an error only when a term's Runnable fails while its
// resources are served (as a Runnable added with Add would).
func (s *servedRunnable) Run(ctx context.Context) error {
	s.crdSeen = map[string]bool{}
	s.setState("", nil) // not the last term's "manager stopping": this one is starting
	logger := klog.FromContext(ctx).WithValues("controller", s.w.Name)
	ctx = klog.NewContext(ctx, logger)
	kick := make(chan struct{}, 1)
	poke := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	crds, stopWatch := s.watchCRDs(ctx, poke)
	defer stopWatch()

	var (
		t       *term
		lastErr string // the last Build error logged, so a retry failing alike is not logged again
	)
	defer func() {
		if t != nil {
			_ = t.stop()
		}
		s.setState("manager stopping", nil)
	}()
	for {
		missing := s.missing(ctx, crds)
		switch {
		case len(missing) == 0 && t == nil:
			var err error
			if t, err = s.start(ctx); err != nil {
				s.setState("build failed: "+err.Error(), nil)
				if msg := err.Error(); msg != lastErr {
					lastErr = msg
					logger.Error(err, "Building the controller failed; retrying", "retryEvery", s.w.RecheckInterval)
				}
				break
			}
			lastErr = ""
			logger.Info("Resources served: started", "resources", s.names())
			s.setState("", t.r)
		case len(missing) > 0 && t != nil:
			logger.Info("Resources no longer served: stopping", "missing", missing)
			if err := t.stop(); err != nil && !errors.Is(err, context.Canceled) {
				logger.Error(err, "Stopped with an error")
			}
			t = nil
			fallthrough
		case len(missing) > 0:
			waiting := "waiting for " + strings.Join(missing, "; ")
			if s.waitingFor() != waiting {
				logger.Info("Waiting for resources to be served", "missing", missing)
			}
			s.setState(waiting, nil)
		}
		var done chan error
		if t != nil {
			done = t.done
		}
		recheck := s.m.clock.NewTimer(s.w.RecheckInterval)
		select {
		case <-ctx.Done():
			recheck.Stop()
			return nil
		case <-kick:
		case <-recheck.C():
		case err := <-done:
			t.cancel()
			t = nil
			if err != nil && !(errors.Is(err, context.Canceled) && ctx.Err() != nil) {
				return fmt.Errorf("%s: %w", s.w.Name, err)
			}
			// It returned nil on its own: built again after the recheck
			// interval, not at once (one that always returns would spin).
			logger.Info("The controller returned on its own; building it again after the recheck interval", "recheckInterval", s.w.RecheckInterval)
			s.setState("the controller returned; building it again", nil)
			select {
			case <-ctx.Done():
				recheck.Stop()
				return nil
			case <-recheck.C():
			}
		}
		recheck.Stop()
	}
}

// start builds and runs a term's Runnable.
func (s *servedRunnable) start(ctx context.Context) (*term, error) {
	tctx, cancel := context.WithCancel(ctx)
	r, err := s.w.Build(tctx, s.m.factory.HeldUntil(tctx))
	if err == nil && r == nil {
		err = errors.New("WhenServed.Build returned no Runnable")
	}
	if err != nil {
		cancel()
		return nil, err
	}
	t := &term{r: r, cancel: cancel, done: make(chan error, 1)}
	go func() { t.done <- r.Run(tctx) }() // owned by Run: every path out of it stops t
	return t, nil
}

// crdName is the name of the CRD that would define gvr.
func crdName(gvr schema.GroupVersionResource) string { return gvr.Resource + "." + gvr.Group }

// watchCRDs starts one informer per resource of a named group, each
// watching the one CRD that would define it, calling poke on every change
// and once synced. The returned stop ends and waits for them.
func (s *servedRunnable) watchCRDs(ctx context.Context, poke func()) (map[string]cache.SharedIndexInformer, func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	infs := map[string]cache.SharedIndexInformer{}
	for _, gvr := range s.w.Resources {
		if gvr.Group == "" {
			continue // the core group has no CRDs
		}
		name := crdName(gvr)
		if _, ok := infs[name]; ok {
			continue
		}
		inf := directinformer.Dynamic(s.m.dynamic, customresource.CRDResource, "", func(o *metav1.ListOptions) {
			o.FieldSelector = "metadata.name=" + name
		}, directinformer.Options{Name: "customresourcedefinitions " + name})
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { poke() },
			UpdateFunc: func(any, any) { poke() },
			DeleteFunc: func(any) { poke() },
		})
		infs[name] = inf
		wg.Go(func() { inf.RunWithContext(ctx) })
		wg.Go(func() {
			if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
				poke()
			}
		})
	}
	return infs, func() {
		cancel()
		wg.Wait()
	}
}

// missing returns why each resource not served is not, sorted; none when
// all are.
func (s *servedRunnable) missing(ctx context.Context, crds map[string]cache.SharedIndexInformer) []string {
	var out []string
	for _, gvr := range s.w.Resources {
		if why := s.notServed(ctx, gvr, crds); why != "" {
			out = append(out, fmt.Sprintf("%s: %s", groupVersionResource(gvr), why))
		}
	}
	slices.Sort(out)
	return out
}

// notServed says why gvr is not served, "" when it is.
func (s *servedRunnable) notServed(ctx context.Context, gvr schema.GroupVersionResource, crds map[string]cache.SharedIndexInformer) string {
	if inf := crds[crdName(gvr)]; inf != nil {
		obj, exists, _ := inf.GetStore().GetByKey(crdName(gvr))
		if u, ok := obj.(*unstructured.Unstructured); exists && ok {
			s.crdSeen[crdName(gvr)] = true
			return crdNotServing(u, gvr.Version)
		}
		if s.crdSeen[crdName(gvr)] {
			// Its CRD is gone: discovery may still list it for a moment.
			return "CRD " + crdName(gvr) + " was deleted"
		}
	}
	list, err := s.m.client.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	switch {
	case apierrors.IsNotFound(err):
		if gvr.Group == "" {
			return "not served"
		}
		return "no CRD " + crdName(gvr) + " and not served"
	case err != nil:
		klog.FromContext(ctx).V(2).Info("Discovery failed", "groupVersion", gvr.GroupVersion(), "err", err)
		return "discovery failed: " + err.Error()
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			return ""
		}
	}
	return "not served"
}

// crdNotServing says why crd does not serve version, "" when it does.
//
// A CRD being deleted still serves: the API server deletes its objects
// first, and their finalizers need their controller running.
func crdNotServing(crd *unstructured.Unstructured, version string) string {
	if !customresource.IsCRDEstablished(crd) {
		return "CRD " + crd.GetName() + " is not established"
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		ver, _ := v.(map[string]any)
		if ver["name"] == version && ver["served"] == true {
			return ""
		}
	}
	return "CRD " + crd.GetName() + " does not serve version " + version
}

func (s *servedRunnable) names() []string {
	out := make([]string, len(s.w.Resources))
	for i, gvr := range s.w.Resources {
		out[i] = groupVersionResource(gvr)
	}
	return out
}

// groupVersionResource is gvr as kubectl spells it: podsets.example.com/v1.
func groupVersionResource(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource + "/" + gvr.Version
	}
	return gvr.Resource + "." + gvr.Group + "/" + gvr.Version
}
