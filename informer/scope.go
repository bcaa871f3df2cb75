package informer

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// ScopeOption narrows what one informer lists and watches, so its cache
// holds only the objects a controller reads: pass them to For. T is the
// informer's type, so an option built for another type does not compile.
// Options are applied in order; a later option of the same kind replaces an
// earlier one.
//
// A scope is per informer, not per factory: a factory serves each type with
// one scope (see For). Transforms stay factory-wide (ObjectOptions.Transform): a type
// has one cache per factory, so a per-type factory option already applies to
// exactly that cache.
type ScopeOption[T Object] func(*scope) error

// InNamespaces limits the informer to objects in the given namespaces. The
// factory runs one client-go informer (one List+Watch) per namespace behind
// the one Informer[T]: its lister, indexes and handlers span them all, and
// Get of an object in another namespace answers NotFound. Without
// InNamespaces the informer watches the factory's namespace (Options.Namespace),
// all namespaces by default. Names are validated; duplicates are ignored.
// A cluster-scoped type has no namespaces to narrow to: client-go ignores
// the namespace of its informers, and the factory reports that once to its
// error handler.
func InNamespaces[T Object](namespaces ...string) ScopeOption[T] {
	return func(s *scope) error {
		if len(namespaces) == 0 {
			return errors.New("InNamespaces: no namespace given (omit the option to watch every namespace)")
		}
		for _, ns := range namespaces {
			if ns == metav1.NamespaceAll {
				return errors.New(`InNamespaces: empty namespace name (omit the option to watch every namespace)`)
			}
			if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
				return fmt.Errorf("InNamespaces: invalid namespace %q: %s", ns, strings.Join(msgs, "; "))
			}
		}
		s.namespaces, s.set, s.shards = slices.Compact(slices.Sorted(slices.Values(namespaces))), nil, false
		return nil
	}
}

// WithLabelSelector limits the informer to objects whose labels match
// selector, in kubectl's syntax ("app=web,tier!=cache", "env in (a,b)"; for
// a labels.Selector pass its String()). The API server filters, so objects
// that do not match never reach the process. An object relabelled out of the
// selector leaves the cache and handlers see it deleted; relabelled in, it
// is added. It is ANDed with a selector set by Options.TweakListOptions.
func WithLabelSelector[T Object](selector string) ScopeOption[T] {
	return func(s *scope) error {
		sel, err := labels.Parse(selector)
		if err != nil {
			return fmt.Errorf("WithLabelSelector(%q): %w", selector, err)
		}
		s.labels = sel.String()
		return nil
	}
}

// WithFieldSelector limits the informer to objects whose fields match
// selector ("status.phase=Running", "spec.nodeName=node-1"). The API server
// supports only a few fields per kind (metadata.name and metadata.namespace
// for all) and refuses the list otherwise, which WaitForCacheSync then
// reports as not synced. It is ANDed with a selector set by
// Options.TweakListOptions.
func WithFieldSelector[T Object](selector string) ScopeOption[T] {
	return func(s *scope) error {
		sel, err := fields.ParseSelector(selector)
		if err != nil {
			return fmt.Errorf("WithFieldSelector(%q): %w", selector, err)
		}
		s.fields = sel.String()
		return nil
	}
}

// scope is what an informer lists and watches, in canonical form (sorted
// namespaces, selectors re-rendered by their parsers) so that equal scopes
// compare equal.
type scope struct {
	namespaces []string // nil: the factory's namespace (or set's)
	// set is the namespaces of InNamespaceSet, or the shard selectors of
	// InShardSet (shards): they change at run time, so two scopes are equal
	// only with the same set.
	set    *NamespaceSet
	shards bool
	labels string
	fields string
}

func buildScope[T Object](opts []ScopeOption[T]) (scope, error) {
	var s scope
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(&s); err != nil {
			return scope{}, fmt.Errorf("informer for %s: %w", object.TypeName(reflect.TypeFor[T]()), err)
		}
	}
	return s, nil
}

func (s scope) equal(o scope) bool {
	return slices.Equal(s.namespaces, o.namespaces) && s.set == o.set && s.shards == o.shards && s.labels == o.labels && s.fields == o.fields
}

// String describes the scope for errors and logs.
func (s scope) String() string {
	var parts []string
	switch {
	case s.set != nil && s.shards:
		parts = append(parts, "shards of set "+s.set.String())
	case s.set != nil:
		parts = append(parts, "namespaces of set "+s.set.String())
	case len(s.namespaces) == 0:
		parts = append(parts, "the factory's namespaces")
	default:
		parts = append(parts, "namespaces "+strings.Join(s.namespaces, ","))
	}
	if s.labels != "" {
		parts = append(parts, fmt.Sprintf("labels %q", s.labels))
	}
	if s.fields != "" {
		parts = append(parts, fmt.Sprintf("fields %q", s.fields))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// label is the scope in the form of the scope label of the
// ctrlkit_informer_* metrics (see InformerMemory.Scope).
func (s scope) label() string {
	var b strings.Builder
	switch {
	case s.set != nil && s.shards:
		b.WriteString("shards=" + s.set.String())
	case s.set != nil:
		b.WriteString("set=" + s.set.String())
	case len(s.namespaces) == 0:
		b.WriteString("cluster")
	default:
		b.WriteString("namespaces=" + strings.Join(s.namespaces, ","))
	}
	if s.labels != "" {
		b.WriteString(";labels=" + s.labels)
	}
	if s.fields != "" {
		b.WriteString(";fields=" + s.fields)
	}
	return b.String()
}

// narrowed reports whether the scope asks for anything beyond the factory's
// own configuration.
func (s scope) narrowed() bool {
	return len(s.namespaces) > 0 || s.set != nil || s.labels != "" || s.fields != ""
}

// tweak returns the list-options function of a scoped informer: the
// factory's tweak first, then the scope's selectors ANDed to what it set.
func (s scope) tweak(factoryTweak func(*metav1.ListOptions)) func(*metav1.ListOptions) {
	return func(o *metav1.ListOptions) {
		if factoryTweak != nil {
			factoryTweak(o)
		}
		o.LabelSelector = and(o.LabelSelector, s.labels)
		o.FieldSelector = and(o.FieldSelector, s.fields)
	}
}

// partition returns the namespace and the list-options function of one
// client-go informer of the scope: for a namespace, that namespace and the
// scope's tweak; for a shard of an InShardSet scope (p is its selector), the
// factory's namespace and the tweak with the shard selector set.
func (s scope) partition(p, factoryNS string, factoryTweak func(*metav1.ListOptions)) (string, func(*metav1.ListOptions)) {
	tweak := s.tweak(factoryTweak)
	if !s.shards {
		return p, tweak
	}
	return factoryNS, func(o *metav1.ListOptions) {
		tweak(o)
		o.ShardSelector = p
	}
}

// and joins two selectors: a comma is AND in both label and field selectors.
func and(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "," + b
}

// ScopeConflictError reports a second For of one type with another scope on
// the same factory (errors.As finds it in For's error). Two controllers reading different caches of one type
// through one factory is almost always a bug (one of them misses objects it
// expects), so the factory refuses rather than picking one; use one scope
// for both, or a second Factory for a deliberately different cache.
type ScopeConflictError struct {
	// Informer names the informer (see Informer.Name).
	Informer string
	// Have is the scope the factory serves, Want the one asked for.
	Have, Want string
}

func (e *ScopeConflictError) Error() string {
	return "informer " + e.Informer + ": already served with scope " + e.Have + ", cannot serve scope " + e.Want + " (use one scope, or another factory)"
}
