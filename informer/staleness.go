package informer

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/internal/versions"
)

// Staleness is how far one informer's cache lags the API server, as of the
// last check (Options.StalenessCheck).
type Staleness struct {
	// Resource and Scope name the informer as InformerMemory does.
	Resource, Scope string
	// InformerResourceVersion is the resourceVersion the informer last
	// applied (an event, a list or a watch bookmark); ServerResourceVersion
	// the API server's current one, from a list of one object.
	InformerResourceVersion, ServerResourceVersion string
	// Lag is ServerResourceVersion minus InformerResourceVersion: how many writes to the cluster's
	// storage the cache has not seen yet, or may not have (a quiet resource's
	// informer only learns of later resourceVersions from bookmarks, about
	// once a minute). 0 when the informer is current or ahead; -1 when
	// unknown (resourceVersions not integers, the informer has not listed,
	// the check failed).
	Lag int64
	// Checked is when the server was asked.
	Checked time.Time
	// Err is why the check failed, if it did.
	Err error
}

// staleness holds the last checks' results.
type staleness struct {
	client rest.Interface
	mu     sync.Mutex
	last   map[registryKey]Staleness
}

// newStaleness returns the checker of Options.StalenessCheck, or nil.
func (f *Factory) newStaleness() *staleness {
	if f.cfg.stalenessInterval <= 0 || f.client == nil {
		return nil
	}
	rc := f.client.Discovery().RESTClient()
	if rc == nil || (reflect.ValueOf(rc).Kind() == reflect.Pointer && reflect.ValueOf(rc).IsNil()) {
		return nil
	}
	return &staleness{client: rc, last: map[registryKey]Staleness{}}
}

// Staleness returns the last check of each informer (Options.StalenessCheck),
// sorted by resource and scope; empty before the first check or without the
// option.
func (f *Factory) Staleness() []Staleness {
	if f.staleness == nil {
		return nil
	}
	f.mu.Lock()
	live := make(map[registryKey]bool, len(f.informers))
	for k := range f.informers {
		live[k] = true
	}
	f.mu.Unlock()
	s := f.staleness
	s.mu.Lock()
	out := make([]Staleness, 0, len(s.last))
	for k, v := range s.last {
		if live[k] {
			out = append(out, v)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Staleness) int {
		return strings.Compare(a.Resource+"\x00"+a.Scope, b.Resource+"\x00"+b.Scope)
	})
	return out
}

// runStaleness checks every interval until stop is closed.
func (f *Factory) runStaleness(ctx context.Context, stop <-chan struct{}) {
	t := f.clock().NewTicker(f.cfg.stalenessInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C():
			f.checkStaleness(ctx)
		}
	}
}

// checkStaleness checks each synced informer once.
func (f *Factory) checkStaleness(ctx context.Context) {
	type target struct {
		key  registryKey
		inf  registered
		name string
		sc   scope
	}
	f.mu.Lock()
	targets := make([]target, 0, len(f.informers))
	for k, inf := range f.informers {
		targets = append(targets, target{key: k, inf: inf, name: inf.Name(), sc: inf.servedScope()})
	}
	f.mu.Unlock()
	for _, t := range targets {
		if ctx.Err() != nil {
			return
		}
		if !t.inf.HasSynced() {
			continue
		}
		res := Staleness{Resource: t.name, Scope: t.sc.label(), Lag: -1, Checked: f.clock().Now()}
		res.InformerResourceVersion = t.inf.lastResourceVersion()
		// A namespace the informer watches, where its own list rights hold.
		ns := f.cfg.namespace
		switch {
		case len(t.sc.namespaces) > 0:
			ns = t.sc.namespaces[0]
		case t.sc.set != nil:
			set := t.sc.set.List()
			switch {
			case len(set) == 0:
				continue // watching nothing: nothing to lag
			case !t.sc.shards:
				ns = set[0]
			}
		}
		res.ServerResourceVersion, res.Err = f.staleness.serverResourceVersion(ctx, t.inf.GVR(), ns)
		if res.Err == nil {
			res.Lag = versions.Lag(res.ServerResourceVersion, res.InformerResourceVersion)
		}
		f.staleness.mu.Lock()
		f.staleness.last[t.key] = res
		f.staleness.mu.Unlock()
	}
}

// serverResourceVersion lists one object of gvr (in namespace ns, falling
// back to the whole cluster for a cluster-scoped resource) and returns the
// list's resourceVersion: the server's current one.
func (s *staleness) serverResourceVersion(ctx context.Context, gvr schema.GroupVersionResource, ns string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rv, err := s.list(ctx, gvr, ns)
	if ns != "" && apierrors.IsNotFound(err) {
		rv, err = s.list(ctx, gvr, "")
	}
	return rv, err
}

func (s *staleness) list(ctx context.Context, gvr schema.GroupVersionResource, ns string) (string, error) {
	path := []string{"/apis", gvr.Group, gvr.Version}
	if gvr.Group == "" {
		path = []string{"/api", gvr.Version}
	}
	if ns != "" {
		path = append(path, "namespaces", ns)
	}
	path = append(path, gvr.Resource)
	raw, err := s.client.Get().AbsPath(path...).Param("limit", "1").SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("list %s with limit=1: %w", gvr.String(), err)
	}
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return "", fmt.Errorf("list %s with limit=1: %w", gvr.String(), err)
	}
	return list.Metadata.ResourceVersion, nil
}
