package informer

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/internal/builtin"
	"github.com/ctrlkit/ctrlkit/internal/versions"
)

// Version is the API server's state of one informer's resource at one moment, in the
// informer's scope: the resourceVersion of a consistent read (a list of one object) in each of
// its namespaces, or shards. Take it with VersionOf. Reached tells without a request whether the
// cache has applied it; Confirm asks the server when Reached cannot tell; Wait returns once the
// cache has reached it.
//
// "The cache has reached V" means one thing across ctrlkit: controller.Options.Freshness (the
// gate before the workers start and the breaker on lag) asks it of an informer, write fences of
// one object.
//
// A Version may be used from several goroutines.
type Version struct {
	f     *Factory
	name  string
	parts []*versionPart
}

// versionPart is one client-go informer of the scope: a namespace's, a shard's, or the only one.
type versionPart struct {
	where     string // the namespace or shard selector, for messages; "" for a whole scope
	inf       cache.SharedIndexInformer
	list      serverList
	rv        string      // the consistent read's; "" when the server gave none
	confirmed atomic.Bool // Confirm found the cache at rv or later
	// gone reports whether the scope no longer has this part (a namespace left an
	// InNamespaceSet, a shard left an InShardSet): its informer stopped, and nothing waits on
	// it. nil for a fixed scope.
	gone func() bool
}

// serverList lists the informer's resource in one part of its scope, as its informer does.
type serverList func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)

// VersionOf takes a consistent read of inf's resource now, in inf's scope, and returns it as a
// Version. An Informer not built by a Factory, or whose client returned no resourceVersion, has
// nothing to compare: its Version is always reached. client-go's plain fake clientset stamps
// lists, not objects: Confirm then checks only that every listed object is cached.
func VersionOf[T Object](ctx context.Context, inf Informer[T]) (*Version, error) {
	s, ok := inf.(*sharedInformer[T])
	if !ok {
		return &Version{name: inf.Name()}, nil
	}
	v := &Version{f: s.f, name: s.name, parts: s.versionParts()}
	for _, p := range v.parts {
		obj, err := p.list(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return nil, fmt.Errorf("informer %s: a consistent read%s: %w", s.name, p.in(), err)
		}
		l, err := meta.ListAccessor(obj)
		if err != nil {
			return nil, fmt.Errorf("informer %s: a consistent read%s: %w", s.name, p.in(), err)
		}
		p.rv = l.GetResourceVersion()
	}
	return v, nil
}

// Reached reports, without a request, whether the informer has applied the version or a later
// one in every part of its scope, or Confirm found it has. A part the scope no longer has (a
// namespace that left an InNamespaceSet) counts as reached. An informer hears of later
// resourceVersions from events and from watch bookmarks (kube-apiserver sends one about every
// minute), so the informer of a quiet resource may be current without Reached knowing it.
// A resourceVersion that is not an integer cannot be judged: it counts as reached.
func (v *Version) Reached() bool {
	for _, p := range v.parts {
		if !p.reached() {
			return false
		}
	}
	return true
}

func (p *versionPart) reached() bool {
	if p.confirmed.Load() || (p.gone != nil && p.gone()) {
		return true
	}
	return versions.Reached(appliedVersion(p.inf), p.rv)
}

func (p *versionPart) in() string {
	if p.where == "" {
		return ""
	}
	return " in " + p.where
}

// Lagging describes the parts not reached, such as "the cache is at 120, the server was at
// 135", each prefixed with its namespace (or shard) for an informer of several; "" when
// Reached.
func (v *Version) Lagging() string {
	var out []string
	for _, p := range v.parts {
		if p.reached() {
			continue
		}
		at := appliedVersion(p.inf)
		if at == "" {
			at = `"" (not listed)`
		}
		where := ""
		if p.where != "" {
			where = p.where + ": "
		}
		out = append(out, where+"the cache is at "+at+", the server was at "+p.rv)
	}
	return strings.Join(out, "; ")
}

// Confirm reports whether the cache holds the server's state as of the version or later,
// asking the server where Reached cannot tell: a consistent list in the part's scope, compared
// object by object with the cache. Every object listed must be cached at its listed
// resourceVersion or later, and every cached object no newer than the list must be listed (or
// the cache still holds something deleted). It is how the informer of a quiet resource proves
// it is current without waiting for a bookmark. The list costs what a relist costs, so call it
// only once Reached stayed false for a while.
func (v *Version) Confirm(ctx context.Context) (bool, error) {
	all := true
	for _, p := range v.parts {
		if p.reached() {
			continue
		}
		ok, err := p.confirm(ctx)
		if err != nil {
			return false, fmt.Errorf("informer %s: comparing the cache with a consistent list%s: %w", v.name, p.in(), err)
		}
		if ok {
			p.confirmed.Store(true)
			continue
		}
		all = false
	}
	return all, nil
}

func (p *versionPart) confirm(ctx context.Context) (bool, error) {
	listed := map[string]string{} // key -> resourceVersion
	var at string
	opts := metav1.ListOptions{Limit: 500}
	for {
		obj, err := p.list(ctx, opts)
		if err != nil {
			return false, err
		}
		l, err := meta.ListAccessor(obj)
		if err != nil {
			return false, err
		}
		if at == "" {
			at = l.GetResourceVersion() // later pages are served at the first one's
		}
		err = meta.EachListItem(obj, func(o runtime.Object) error {
			m, err := meta.Accessor(o)
			if err != nil {
				return err
			}
			listed[objectKey(m)] = m.GetResourceVersion()
			return nil
		})
		if err != nil {
			return false, err
		}
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			break
		}
	}
	if at == "" || !versions.Comparable(at) {
		return true, nil // nothing to judge by
	}
	if versions.Reached(appliedVersion(p.inf), at) {
		return true, nil
	}
	store := p.inf.GetStore()
	for key, rv := range listed {
		o, ok, err := store.GetByKey(key)
		if err != nil || !ok {
			return false, err // not cached yet (or deleted since, which Reached would show)
		}
		m, err := meta.Accessor(o)
		if err != nil || !versions.AtLeast(m.GetResourceVersion(), rv) {
			return false, err
		}
	}
	for _, o := range store.List() {
		m, err := meta.Accessor(o)
		if err != nil {
			return false, err
		}
		if _, ok := listed[objectKey(m)]; !ok && !versions.Newer(m.GetResourceVersion(), at) {
			return false, nil // deleted by then, still cached
		}
	}
	return true, nil
}

// Wait returns once the cache has reached the version (Reached, or Confirm after Reached stayed
// false for 100 ms, then at intervals doubling up to 30 s, back to 100 ms whenever the cache
// moves), or with ctx's error. A failed
// Confirm is retried at the same intervals; each unsuccessful one is logged at V(2) with the
// logger in ctx. It is how controller.Options.Freshness holds a
// controller's workers until the caches caught up.
func (v *Version) Wait(ctx context.Context) error {
	if v.Reached() {
		return nil
	}
	clk := v.f.clock()
	poll := 10 * time.Millisecond
	every := firstConfirm
	next := clk.Now().Add(every)
	seen := v.applied()
	for {
		t := clk.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
		if v.Reached() {
			return nil
		}
		poll = min(2*poll, time.Second)
		if now := v.applied(); now != seen {
			// The cache moved (a partition healed, a watch resumed): compare again soon
			// rather than at the interval the wait had grown to.
			seen, every = now, firstConfirm
			next = minTime(next, clk.Now().Add(every))
		}
		if clk.Now().Before(next) {
			continue
		}
		ok, err := v.Confirm(ctx)
		switch {
		case ok:
			return nil
		case ctx.Err() != nil:
		case err != nil:
			klog.FromContext(ctx).V(2).Info("Could not compare a cache with the API server; trying again", "informer", v.name, "err", err, "after", every)
		default:
			klog.FromContext(ctx).V(2).Info("A cache still lags behind the API server", "informer", v.name, "lagging", v.Lagging(), "next", every)
		}
		every = min(2*every, 30*time.Second)
		next = clk.Now().Add(every)
	}
}

// applied is what the informer has applied in each part, to see it move.
func (v *Version) applied() string {
	var b strings.Builder
	for _, p := range v.parts {
		b.WriteString(appliedVersion(p.inf))
		b.WriteByte(',')
	}
	return b.String()
}

// firstConfirm is how long Wait lets events and bookmarks bring the cache to the version
// before it compares the cache with a list: long enough for the events of a busy resource, which
// arrive within milliseconds, short enough not to slow down a failover.
const firstConfirm = 100 * time.Millisecond

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// versionParts returns the client-go informers of s's scope with their server lists; none
// when the factory has no client for s's source.
func (s *sharedInformer[T]) versionParts() []*versionPart {
	ns0, tweak0 := s.f.cfg.namespace, s.f.cfg.tweak
	if m, ok := s.inf.(*multiNamespace); ok {
		view := m.view.Load()
		parts := make([]*versionPart, 0, len(view.namespaces))
		for _, where := range view.namespaces {
			ns, tweak := s.scope.partition(where, ns0, tweak0)
			list := s.serverList(ns, tweak)
			if list == nil {
				return nil
			}
			inf := view.byNS[where]
			gone := func() bool { return m.view.Load().byNS[where] != inf }
			parts = append(parts, &versionPart{where: where, inf: inf, list: list, gone: gone})
		}
		return parts
	}
	ns := ns0
	if len(s.scope.namespaces) == 1 {
		ns = s.scope.namespaces[0]
	}
	ns, tweak := s.scope.partition(ns, ns0, tweak0)
	list := s.serverList(ns, tweak)
	if list == nil {
		return nil
	}
	return []*versionPart{{inf: s.inf, list: list}}
}

// serverList lists what the informer of namespace ns with list options tweak lists, through
// the client its source uses; nil when the factory has none.
func (s *sharedInformer[T]) serverList(ns string, tweak func(*metav1.ListOptions)) serverList {
	with := func(o metav1.ListOptions) metav1.ListOptions {
		if tweak != nil {
			tweak(&o)
		}
		return o
	}
	switch s.src {
	case sourceTyped:
		bt, err := builtin.Of(reflect.TypeFor[T]())
		if err != nil || s.f.client == nil {
			return nil
		}
		return typedList(bt, s.f.client, ns, tweak)
	case sourceMetadata:
		mc := s.f.cfg.metadataClient
		if mc == nil {
			return nil
		}
		return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return mc.Resource(s.gvr).Namespace(ns).List(ctx, with(o))
		}
	case sourceDynamic:
		dc := s.f.cfg.dynamicClient
		if dc == nil {
			return nil
		}
		return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return dc.Resource(s.gvr).Namespace(ns).List(ctx, with(o))
		}
	}
	return nil
}

// appliedVersion is the resourceVersion inf's cache has applied: its store's, what a lister
// reads, which client-go records with its AtomicFIFO feature (on by default since 1.36). The
// reflector's LastSyncResourceVersion runs ahead of it by the events queued between the two:
// a cache judged by it could be said to have reached a write its lister does not show yet.
// Without the feature the store records none, and the reflector's is all there is.
func appliedVersion(inf cache.SharedIndexInformer) string {
	if rv := inf.GetIndexer().LastStoreSyncResourceVersion(); rv != "" {
		return rv
	}
	return inf.LastSyncResourceVersion()
}
