package informer

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/cache"
)

// NamespaceSet is a set of namespace names that changes while the program
// runs: the scope of informers built with InNamespaceSet, which follow it.
// Set, Add and Remove change it; the informers scoped by it apply each change
// in a goroutine of their own (see InNamespaceSet), so the calls never wait
// for an informer and may be made from any goroutine, event handlers
// included. A NamespaceSet is safe for concurrent use; its zero value is not
// usable: build one with NewNamespaceSet or NamespacesMatching.
type NamespaceSet struct {
	mu    sync.Mutex
	names map[string]struct{}
	// gen counts changes, so an informer can tell whether it applied the
	// latest one (its HasSynced is false until it has).
	gen uint64
	// subs are the informers following the set, woken by a change. A
	// subscriber's channel has room for one wake-up: changes are read from
	// the set, not from the channel, so coalescing them loses nothing.
	subs map[chan struct{}]struct{}
	// source, when set, is what fills the set (NamespacesMatching): the
	// informers scoped by the set have not synced before it has.
	source cache.DoneChecker
	// valid checks a member; nil checks a namespace name (a ShardSet's
	// checks a shard selector).
	valid func(what, name string) error
}

// NewNamespaceSet returns a set holding namespaces. Each name must be a
// DNS-1123 label (as namespace names are); "" (all namespaces) is refused,
// since an informer cannot watch every namespace and a few more.
// Duplicates are ignored. An empty set is valid: its informers watch
// nothing and have synced.
func NewNamespaceSet(namespaces ...string) (*NamespaceSet, error) {
	s := &NamespaceSet{names: map[string]struct{}{}, subs: map[chan struct{}]struct{}{}}
	if err := s.Set(namespaces...); err != nil {
		return nil, err
	}
	return s, nil
}

// validNamespace checks one name as InNamespaces does.
func validNamespace(what, ns string) error {
	if ns == metav1.NamespaceAll {
		return fmt.Errorf("%s: empty namespace name", what)
	}
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		return fmt.Errorf("%s: invalid namespace %q: %s", what, ns, strings.Join(msgs, "; "))
	}
	return nil
}

// check validates one member for method what.
func (s *NamespaceSet) check(what, name string) error {
	if s.valid != nil {
		return s.valid("ShardSet."+what, name)
	}
	return validNamespace("NamespaceSet."+what, name)
}

// Set replaces the set's namespaces. Names are validated first: on error the
// set is unchanged.
func (s *NamespaceSet) Set(namespaces ...string) error {
	names := make(map[string]struct{}, len(namespaces))
	for _, ns := range namespaces {
		if err := s.check("Set", ns); err != nil {
			return err
		}
		names[ns] = struct{}{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.names != nil && sameKeys(s.names, names) {
		return nil
	}
	s.names = names
	s.changedLocked()
	return nil
}

// Add adds ns to the set; adding a member is a no-op.
func (s *NamespaceSet) Add(ns string) error {
	if err := s.check("Add", ns); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.names[ns]; ok {
		return nil
	}
	s.names[ns] = struct{}{}
	s.changedLocked()
	return nil
}

// Remove removes ns from the set; removing a non-member is a no-op.
func (s *NamespaceSet) Remove(ns string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.names[ns]; !ok {
		return
	}
	delete(s.names, ns)
	s.changedLocked()
}

// Has reports whether ns is in the set.
func (s *NamespaceSet) Has(ns string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.names[ns]
	return ok
}

// List returns the set's namespaces, sorted.
func (s *NamespaceSet) List() []string {
	names, _ := s.snapshot()
	return names
}

// String lists the namespaces: "{a,b}".
func (s *NamespaceSet) String() string {
	return "{" + strings.Join(s.List(), ",") + "}"
}

// snapshot returns the sorted names and the change count they belong to.
func (s *NamespaceSet) snapshot() ([]string, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(func(yield func(string) bool) {
		for ns := range s.names {
			if !yield(ns) {
				return
			}
		}
	}), s.gen
}

func (s *NamespaceSet) generation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

// changedLocked counts a change and wakes the subscribers without waiting
// for them.
func (s *NamespaceSet) changedLocked() {
	s.gen++
	for ch := range s.subs {
		select {
		case ch <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

// subscribe makes ch receive a wake-up on every change until the returned
// function is called. ch must have a buffer of at least one.
func (s *NamespaceSet) subscribe(ch chan struct{}) (unsubscribe func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subs[ch] = struct{}{}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.subs, ch)
	}
}

// sourceSynced returns the checker of what fills the set, or nil.
func (s *NamespaceSet) sourceSynced() cache.DoneChecker {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.source
}

func sameKeys(a, b map[string]struct{}) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

// InNamespaceSet limits the informer to the objects in the namespaces of
// set, and makes it follow the set as it changes. Like InNamespaces, one
// client-go informer (one List+Watch, in an informer factory of its own)
// serves each namespace behind the one Informer[T]; a goroutine of the
// informer, stopped and waited for by Factory.Shutdown, applies the set's
// changes:
//
//   - A namespace added gets its informer, with every index and handler
//     added so far; it is started at once if the factory runs. Its handlers
//     receive the namespace's objects as adds with isInitialList true (the
//     replay client-go gives a handler added to a running informer).
//   - A namespace removed has its informer stopped (and waited for), then
//     every object its cache held is delivered to every handler as a delete
//     with DeleteInfo.OutOfScope set: the objects were not deleted, they left
//     the informer's scope. Handlers registered on Informer() with
//     client-go's interface get a cache.DeletedFinalStateUnknown instead.
//   - Lister reads in a namespace outside the set (not yet applied, or
//     removed) fail with an error matching ErrNamespaceNotWatched, never an
//     apierrors NotFound: "not watched" is not "deleted". List across all
//     namespaces spans the current ones.
//   - HasSynced, of the informer and of each handler registration, is true
//     when the latest change of the set has been applied and every current
//     namespace's informer (registration) has synced; for a set from
//     NamespacesMatching, also once the set itself has been filled. It can
//     turn false again when a namespace is added. A namespace whose list is
//     refused (its RBAC not granted yet) keeps it false until the list
//     succeeds: a controller watching the informer then shows in a
//     Manager's /readyz, named, while it keeps reconciling the other
//     namespaces.
//
// Two scopes with InNamespaceSet are equal only with the same set (pointer);
// a later InNamespaces replaces InNamespaceSet and the other way round. The
// factory must watch all namespaces (no Options.Namespace). Per-namespace
// informers of a NamespaceSet report no informer metrics (Options.InformerName):
// a name is held by one informer factory for its life, and theirs come and
// go. Handlers of such an informer, as of InNamespaces, may be called from
// one goroutine per namespace at once.
func InNamespaceSet[T Object](set *NamespaceSet) ScopeOption[T] {
	return func(s *scope) error {
		if set == nil {
			return errors.New("InNamespaceSet: nil set")
		}
		s.set, s.namespaces, s.shards = set, nil, false
		return nil
	}
}

// NamespacesMatching returns a NamespaceSet that holds the namespaces whose
// labels match selector (kubectl's syntax, e.g. "team=payments"; "" matches
// every namespace), following them as they are labelled, unlabelled, created
// and deleted: a namespace being deleted (deletionTimestamp set) counts as
// removed, so informers stop watching it before it goes. Give it to
// InNamespaceSet; informers scoped by it have not synced before the set has
// been filled from the first list of Namespaces.
//
// It takes f's Namespace informer, For[*corev1.Namespace] with
// WithLabelSelector(selector): the factory serves Namespaces with that scope
// from then on, so asking f for Namespaces with another scope (or none) is
// a *ScopeConflictError; another NamespacesMatching with the
// same selector shares the informer. The process needs list and watch on
// namespaces, cluster-wide. The set follows f: it stops changing when f
// shuts down. An invalid selector is an error naming it.
func NamespacesMatching(f *Factory, selector string) (*NamespaceSet, error) {
	if _, err := labels.Parse(selector); err != nil {
		return nil, fmt.Errorf("NamespacesMatching(%q): %w", selector, err)
	}
	namespaces, err := For(f, WithLabelSelector[*corev1.Namespace](selector))
	if err != nil {
		return nil, fmt.Errorf("NamespacesMatching(%q): %w", selector, err)
	}
	set, err := NewNamespaceSet()
	if err != nil {
		return nil, err
	}
	track := func(ns *corev1.Namespace) {
		if ns.DeletionTimestamp != nil {
			set.Remove(ns.Name)
			return
		}
		// Cannot fail: the API server validated the name.
		_ = set.Add(ns.Name)
	}
	reg, err := namespaces.AddHandler(HandlerFuncs[*corev1.Namespace]{
		OnAdd:    func(ns *corev1.Namespace, _ bool) { track(ns) },
		OnUpdate: func(_, ns *corev1.Namespace) { track(ns) },
		// Deleted, or relabelled out of the selector (the API server then
		// sends a delete).
		OnDelete: func(ns *corev1.Namespace) { set.Remove(ns.Name) },
	})
	if err != nil {
		return nil, fmt.Errorf("NamespacesMatching(%q): %w", selector, err)
	}
	set.mu.Lock()
	set.source = reg.HasSyncedChecker()
	set.mu.Unlock()
	return set, nil
}
