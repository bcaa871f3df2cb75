package informer

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// ShardSet is a set of shard selectors (metav1.ListOptions.ShardSelector,
// the API server's sharded list and watch, alpha since Kubernetes 1.36 behind
// its ShardedListAndWatch gate) that changes while the program runs: the
// scope of informers built with InShardSet or by a factory with Options.ShardSet,
// which follow it. Each selector is one shard, listed and watched by a
// client-go informer of its own, so adding or removing one leaves the others'
// caches alone. The empty selector "" is the shard of every object (no
// selector sent). Like NamespaceSet, changes are applied by the informers'
// own goroutines, and a ShardSet is safe for concurrent use.
type ShardSet struct {
	set *NamespaceSet
}

// shardTerm is one range of a shard selector, as the API server parses it.
var shardTerm = regexp.MustCompile(`^shardRange\(object\.metadata\.(uid|namespace), '0x[0-9a-f]{16,17}', '0x[0-9a-f]{16,17}'\)$`)

// validShardSelector accepts "" and ORs of shardRange terms over the UID or
// the namespace, the fields the API server hashes.
func validShardSelector(what, sel string) error {
	if sel == "" {
		return nil
	}
	for term := range strings.SplitSeq(sel, " || ") {
		if !shardTerm.MatchString(term) {
			return fmt.Errorf("%s: invalid shard selector %q: want shardRange(object.metadata.uid|namespace, '0x<16 hex digits>', '0x<16 hex digits>') terms joined by ' || '", what, sel)
		}
	}
	return nil
}

// NewShardSet returns a set holding selectors, each validated (see
// ShardSet); duplicates are ignored. An empty set is valid: its informers
// watch nothing and have synced.
func NewShardSet(selectors ...string) (*ShardSet, error) {
	s := &ShardSet{set: &NamespaceSet{names: map[string]struct{}{}, subs: map[chan struct{}]struct{}{}, valid: validShardSelector}}
	if err := s.set.Set(selectors...); err != nil {
		return nil, err
	}
	return s, nil
}

// Set replaces the set's selectors. They are validated first: on error the
// set is unchanged.
func (s *ShardSet) Set(selectors ...string) error { return s.set.Set(selectors...) }

// List returns the set's selectors, sorted.
func (s *ShardSet) List() []string { return s.set.List() }

// String lists the selectors: "{a,b}".
func (s *ShardSet) String() string { return s.set.String() }

// InShardSet limits the informer to the shards of set and makes it follow
// the set as it changes, as InNamespaceSet does for namespaces: one
// client-go informer per selector (its list and watch carry it as
// ShardSelector, in the factory's namespace), behind the one Informer[T].
//
//   - A shard added gets its informer with every index and handler added so
//     far, started at once if the factory runs; handlers receive its objects
//     as adds.
//   - A shard removed has its informer stopped (and waited for), then every
//     object its cache held is delivered to every handler as a delete with
//     DeleteInfo.OutOfScope set: the objects left the scope, they were not
//     deleted.
//   - Reads span the shards: Get looks in each (an object is in one), List
//     and the namespace index gather from all. A key in no shard is absent.
//   - HasSynced is true when the latest change has been applied and every
//     shard's informer has synced; it turns false again when a shard is
//     added.
//
// The API server filters only when it serves the field (gate
// ShardedListAndWatch); one that does not ignores it, and each shard's
// informer then holds every object. A later InNamespaces or InNamespaceSet
// replaces InShardSet and the other way round.
func InShardSet[T Object](set *ShardSet) ScopeOption[T] {
	return func(s *scope) error {
		if set == nil {
			return errors.New("InShardSet: nil set")
		}
		s.set, s.namespaces, s.shards = set.set, nil, true
		return nil
	}
}

// factoryScope applies the factory's ShardSet to sc, the scope of an
// informer of resource gr.
func (f *Factory) factoryScope(what string, sc scope, gr ...schema.GroupResource) (scope, error) {
	if f.cfg.shards == nil {
		return sc, nil
	}
	for _, r := range gr {
		if slices.Contains(f.cfg.unsharded, r) {
			return sc, nil
		}
	}
	if len(sc.namespaces) > 0 || (sc.set != nil && !sc.shards) {
		return scope{}, fmt.Errorf("informer for %s: the factory's informers follow its ShardSet (Options.ShardSet): scope %s cannot narrow them by namespace", what, sc)
	}
	sc.set, sc.shards = f.cfg.shards.set, true
	return sc, nil
}

// typedResources returns the resources Go type t may be served as (its
// kinds in client-go's scheme, pluralised), without building an informer.
func typedResources(t reflect.Type) []schema.GroupResource {
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	obj, ok := reflect.New(t.Elem()).Interface().(runtime.Object)
	if !ok {
		return nil
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		return nil
	}
	var out []schema.GroupResource
	for _, gvk := range gvks {
		gvr, _ := meta.UnsafeGuessKindToResource(gvk)
		out = append(out, gvr.GroupResource())
	}
	return out
}
