package informer

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrUnsupportedType is returned by For when the factory cannot serve the
	// requested Go type (it is not registered in client-go's scheme, or the
	// client-go informer factory has no informer for its resource).
	ErrUnsupportedType = errors.New("type not served by the informer factory")

	// ErrUnexpectedType reports an object of the wrong Go type in an informer's
	// event stream or cache: a foreign tombstone, a transform that returned
	// another type, or a custom resource that failed conversion. The concrete
	// error is an *UnexpectedTypeError.
	ErrUnexpectedType = errors.New("unexpected object type")

	// ErrCacheSyncTimeout is matched by the error WaitForCacheSync returns when
	// its context ends before every informer synced. The concrete error is a
	// *CacheSyncError naming the informers that had not synced.
	ErrCacheSyncTimeout = errors.New("informer caches did not sync")

	// ErrNoClient is matched by the error of For, ForMetadata and
	// ForResource when the factory lacks the client the informer needs (the
	// error names it): For needs the kubernetes.Interface NewFactory was
	// given (nil is allowed for factories that serve only the others),
	// ForMetadata Options.MetadataClient, ForResource Options.DynamicClient;
	// and when the factory itself is nil.
	ErrNoClient = errors.New("no client")

	// ErrInformerNameInUse is reported to the error handler by NewFactory
	// when the name of Options.InformerName is held by another factory of the
	// process (until that factory's Shutdown).
	ErrInformerNameInUse = errors.New("informer name already in use")

	// ErrNamespaceNotWatched is matched by the error a lister of an
	// InNamespaceSet informer returns for a read in a namespace outside the
	// set (never added, removed, or added but not applied yet). It is not an
	// apierrors NotFound on purpose: the object may well exist, and a
	// controller must not take "not watched" for "deleted". The concrete
	// error is a *NamespaceNotWatchedError.
	ErrNamespaceNotWatched = errors.New("namespace not watched")
)

// NamespaceNotWatchedError is a read in a namespace outside an
// InNamespaceSet informer's set. It matches ErrNamespaceNotWatched.
type NamespaceNotWatchedError struct {
	// Informer names the informer (see Informer.Name).
	Informer string
	// Namespace is the namespace read.
	Namespace string
}

func (e *NamespaceNotWatchedError) Error() string {
	return fmt.Sprintf("informer %s: namespace %q is not watched (not in its NamespaceSet)", e.Informer, e.Namespace)
}

// Is makes errors.Is(err, ErrNamespaceNotWatched) true.
func (e *NamespaceNotWatchedError) Is(target error) bool { return target == ErrNamespaceNotWatched }

// UnexpectedTypeError describes an object of the wrong type seen by a typed
// informer. It matches ErrUnexpectedType with errors.Is.
type UnexpectedTypeError struct {
	// Informer names the informer that saw the object (see Informer.Name).
	Informer string
	// Want is the Go type the informer serves, Got the type it saw.
	Want, Got string
	// Tombstone is true when the object arrived inside a
	// cache.DeletedFinalStateUnknown.
	Tombstone bool
	// Key is the object's cache key when it is known.
	Key string
}

func (e *UnexpectedTypeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "informer %s: unexpected object type %s", e.Informer, e.Got)
	if e.Tombstone {
		b.WriteString(" in tombstone")
	}
	if e.Key != "" {
		fmt.Fprintf(&b, " for key %q", e.Key)
	}
	fmt.Fprintf(&b, ", want %s", e.Want)
	return b.String()
}

// Is makes errors.Is(err, ErrUnexpectedType) true.
func (e *UnexpectedTypeError) Is(target error) bool { return target == ErrUnexpectedType }

// typeOf names v's dynamic type with its package path (see object.TypeName), so that types of
// one name in two packages are told apart.
func typeOf(v any) string { return object.TypeName(reflect.TypeOf(v)) }
