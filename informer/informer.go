package informer

import (
	"fmt"
	"reflect"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// indexControllerUID is the name of the built-in index mapping an object to
// the UID of its controlling owner (the owner reference with controller:
// true). Every informer of a Factory has it; query it with ByControllerUID.
const indexControllerUID = "ctrlkit.dev/controller-uid"

// indexNamespace is the built-in index by namespace, client-go's
// cache.NamespaceIndex. Every informer of a Factory has it; namespaced
// listers use it.
const indexNamespace = cache.NamespaceIndex

// Informer is a typed view of one shared informer (a client-go
// cache.SharedIndexInformer). All methods are
// safe for concurrent use. Objects returned by listers, indexes and handlers
// are the cache's own: never mutate them (DeepCopy first).
type Informer[T Object] interface {
	// Name identifies the informer in logs and errors: the resource and
	// group, such as "pods" or "replicasets.apps".
	Name() string
	// String returns Name.
	String() string
	// GVR is the resource the informer lists and watches.
	GVR() schema.GroupVersionResource
	// GVK is the kind of the objects it serves (empty when unknown, e.g. for
	// a metadata informer of a resource missing from client-go's scheme).
	GVK() schema.GroupVersionKind

	// Lister reads the cache.
	Lister() Lister[T]
	// AddHandler registers h for the informer's events. Handlers added
	// after the informer started first receive an add for every cached
	// object (isInitialList true). The registration's HasSynced reports
	// when h has seen the initial list.
	AddHandler(h Handler[T]) (cache.ResourceEventHandlerRegistration, error)
	// RemoveHandler unregisters a handler added with AddHandler.
	RemoveHandler(reg cache.ResourceEventHandlerRegistration) error

	// HasSynced reports whether the cache holds at least one full list.
	HasSynced() bool
	// HasSyncedChecker is HasSynced as a channel, for waiting without polling.
	HasSyncedChecker() cache.DoneChecker

	// AddIndex adds a named index. Adding a name that already exists is not
	// an error and keeps the first function. It works before and after the
	// informer started (existing objects are indexed at once). If fn
	// returns an error for an object, the error is reported to the factory's
	// error handler and the object is left out of that index (client-go would
	// panic).
	AddIndex(name string, fn func(T) ([]string, error)) error
	// ByIndex returns the cached objects whose index name holds value. Every
	// informer of a Factory has two built-in indexes: client-go's
	// cache.NamespaceIndex ("namespace"), and "ctrlkit.dev/controller-uid"
	// (ByControllerUID).
	ByIndex(name, value string) ([]T, error)
	// ByControllerUID returns the cached objects whose controlling owner has
	// the given UID (the "ctrlkit.dev/controller-uid" index): a parent's
	// children without listing everything.
	ByControllerUID(uid types.UID) ([]T, error)

	// Informer is the escape hatch to the underlying client-go informer.
	// For a scope of several namespaces (InNamespaces) it is a composite
	// of the per-namespace informers that behaves as one: reads span them
	// (a key, or the namespace index, is answered by its namespace's
	// cache), handlers and indexers are added to each, and it has synced
	// when each has. For InNamespaceSet the composite follows the set;
	// its SetTransform and SetWatchErrorHandler* return an error, and its
	// client-go handlers receive the objects of a namespace removed as
	// cache.DeletedFinalStateUnknown tombstones.
	Informer() cache.SharedIndexInformer
}

// sharedInformer is the one implementation of Informer.
type sharedInformer[T Object] struct {
	f    *Factory
	name string
	gvr  schema.GroupVersionResource
	gvk  schema.GroupVersionKind
	inf  cache.SharedIndexInformer
	// scope is what For was asked to narrow the informer to (zero when not).
	scope scope
	// src is the client it lists and watches through (VersionOf lists the same way).
	src source
	// meter accounts for its cache's memory; nil without accounting.
	meter *meter

	// idxMu makes AddIndex's check-then-add atomic, since client-go refuses
	// a name that already exists.
	idxMu sync.Mutex
}

var _ Informer[*metav1.PartialObjectMetadata] = (*sharedInformer[*metav1.PartialObjectMetadata])(nil)

func newSharedInformer[T Object](f *Factory, name string, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, inf cache.SharedIndexInformer) (*sharedInformer[T], error) {
	s := &sharedInformer[T]{f: f, name: name, gvr: gvr, gvk: gvk, inf: inf}
	if err := s.addIndexer(indexNamespace, cache.MetaNamespaceIndexFunc); err != nil {
		return nil, err
	}
	if err := s.AddIndex(indexControllerUID, controllerUIDIndex[T]); err != nil {
		return nil, err
	}
	return s, nil
}

func controllerUIDIndex[T Object](obj T) ([]string, error) {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return nil, nil
}

func (s *sharedInformer[T]) Name() string                        { return s.name }
func (s *sharedInformer[T]) String() string                      { return s.name }
func (s *sharedInformer[T]) GVR() schema.GroupVersionResource    { return s.gvr }
func (s *sharedInformer[T]) GVK() schema.GroupVersionKind        { return s.gvk }
func (s *sharedInformer[T]) HasSynced() bool                     { return s.inf.HasSynced() }
func (s *sharedInformer[T]) HasSyncedChecker() cache.DoneChecker { return s.inf.HasSyncedChecker() }
func (s *sharedInformer[T]) Informer() cache.SharedIndexInformer { return s.inf }
func (s *sharedInformer[T]) servedType() reflect.Type            { return reflect.TypeFor[T]() }
func (s *sharedInformer[T]) servedScope() scope                  { return s.scope }
func (s *sharedInformer[T]) lastResourceVersion() string         { return appliedVersion(s.inf) }

func (s *sharedInformer[T]) listenForMeter() error {
	if s.meter == nil {
		return nil
	}
	return s.meter.listen(s.inf)
}

func (s *sharedInformer[T]) Lister() Lister[T] { return &lister[T]{s: s} }

func (s *sharedInformer[T]) AddHandler(h Handler[T]) (cache.ResourceEventHandlerRegistration, error) {
	if h == nil {
		return nil, fmt.Errorf("informer %s: nil handler", s.name)
	}
	if err := validateHandler(h); err != nil {
		return nil, fmt.Errorf("informer %s: %w", s.name, err)
	}
	logger := s.f.logger.WithValues("informer", s.name)
	a := &adapter[T]{h: h, name: s.name, report: s.f.report, forget: s.meter.forgetter()}
	reg, err := s.inf.AddEventHandlerWithOptions(a, cache.HandlerOptions{Logger: &logger})
	if err != nil {
		return nil, fmt.Errorf("informer %s: add handler: %w", s.name, err)
	}
	s.meter.ride(reg, &a.mute)
	return reg, nil
}

func (s *sharedInformer[T]) RemoveHandler(reg cache.ResourceEventHandlerRegistration) error {
	if s.meter.leave(reg) {
		return nil // muted: it keeps forgetting the cache's deletions
	}
	if err := s.inf.RemoveEventHandler(reg); err != nil {
		return fmt.Errorf("informer %s: remove handler: %w", s.name, err)
	}
	return nil
}

func (s *sharedInformer[T]) AddIndex(name string, fn func(T) ([]string, error)) error {
	if name == "" || fn == nil {
		return fmt.Errorf("informer %s: index needs a name and a function", s.name)
	}
	return s.addIndexer(name, func(obj any) ([]string, error) {
		typed, ok := obj.(T)
		if !ok {
			if !unconverted(obj) { // those were reported once, on entry
				s.f.report(s.unexpected(obj))
			}
			return nil, nil
		}
		values, err := fn(typed)
		if err != nil {
			s.f.report(fmt.Errorf("informer %s: index %q for %s: %w", s.name, name, objectKey(typed), err))
			return nil, nil
		}
		return values, nil
	})
}

func (s *sharedInformer[T]) addIndexer(name string, fn cache.IndexFunc) error {
	s.idxMu.Lock()
	defer s.idxMu.Unlock()
	if _, exists := s.inf.GetIndexer().GetIndexers()[name]; exists {
		return nil
	}
	if err := s.inf.AddIndexers(cache.Indexers{name: fn}); err != nil {
		return fmt.Errorf("informer %s: add index %q: %w", s.name, name, err)
	}
	return nil
}

func (s *sharedInformer[T]) ByIndex(name, value string) ([]T, error) {
	objs, err := s.inf.GetIndexer().ByIndex(name, value)
	if err != nil {
		return nil, fmt.Errorf("informer %s: %w", s.name, err)
	}
	return s.typedList(objs)
}

func (s *sharedInformer[T]) ByControllerUID(uid types.UID) ([]T, error) {
	return s.ByIndex(indexControllerUID, string(uid))
}

// typedList converts cache contents to []T. A foreign object (a transform
// or custom-resource conversion went wrong) is reported and left out, so one
// bad object does not hide all the others.
func (s *sharedInformer[T]) typedList(objs []any) ([]T, error) {
	out := make([]T, 0, len(objs))
	for _, obj := range objs {
		typed, ok := obj.(T)
		if !ok {
			if !unconverted(obj) { // those were reported once, on entry
				s.f.report(s.unexpected(obj))
			}
			continue
		}
		out = append(out, typed)
	}
	return out, nil
}

func (s *sharedInformer[T]) unexpected(obj any) error {
	e := &UnexpectedTypeError{Informer: s.name, Want: object.TypeName(reflect.TypeFor[T]()), Got: typeOf(obj)}
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		e.Key = key
	}
	return e
}

// objectKey is cache.MetaNamespaceKeyFunc without the error path.
func objectKey(obj metav1.Object) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}
