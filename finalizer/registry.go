package finalizer

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// ReasonFinalizeFailed is the reason of the Warning event recorded when a finalize function
// fails (see WithEventRecorder).
const ReasonFinalizeFailed = "FinalizeFailed"

// Func cleans up what an object's finalizer guards (an external resource, a record elsewhere)
// before the API server may delete the object. It runs only while the object is being deleted
// and its finalizer is still on it, and until it succeeds: an error keeps the finalizer (and so
// the object) in place and is returned by Finalize, for the controller to retry with backoff.
//
// A Func normally runs once, but it must be idempotent: if the process stops, or the patch
// removing the finalizer fails (a Conflict with a concurrent write), between the cleanup and
// the removal, it runs again. obj is the object as Finalize got it, possibly from a cache: read
// it, do not modify it.
type Func[T Object] func(ctx context.Context, obj T) error

// Option configures Finalizers.
type Option func(*options)

type options struct {
	recorder record.EventRecorder
}

// WithEventRecorder records a Warning event with reason ReasonFinalizeFailed on the object, naming
// the finalizer and the error, each time a finalize function fails: that is where users look
// (kubectl describe) when an object does not go away. Without it (the default) failures are only
// returned and logged by the controller. A manager.Manager gives one with EventRecorderFor.
func WithEventRecorder(r record.EventRecorder) Option {
	return func(o *options) { o.recorder = r }
}

// Result says what Finalize did and what the Reconcile should do next.
type Result struct {
	// Updated is true when Finalize patched the object: it added the missing finalizers, or
	// removed finalizers whose functions succeeded. (controller-runtime's Result has the same
	// field; here the patch is already sent.)
	Updated bool
	// Deleting is true when the object is being deleted (it has a deletionTimestamp, or the
	// server no longer has it). The Reconcile must not do its normal work then (create or
	// update what the object asks for); it returns.
	Deleting bool
	// Finalized is true when the object is being deleted and none of the registered
	// finalizers is left on it: every cleanup ran. The API server deletes the object once the
	// finalizers of others are gone too, so it may already be gone.
	Finalized bool
}

type entry[T Object] struct {
	name string
	fn   Func[T]
}

// Finalizers is an ordered registry of named finalize functions for objects of kind T. The
// Reconcile of T's controller calls Finalize first: it keeps the registered finalizers on every
// live object and, once the object is being deleted, runs their functions in registration
// order, removing each finalizer after its function succeeded. Register before the controller
// starts; Register and Finalize are safe for concurrent use. The zero value is ready to use,
// without an event recorder.
type Finalizers[T Object] struct {
	mu      sync.RWMutex
	entries []entry[T]
	opts    options
}

// New returns an empty registry for objects of kind T.
func New[T Object](opts ...Option) *Finalizers[T] {
	f := &Finalizers[T]{}
	for _, o := range opts {
		if o != nil {
			o(&f.opts)
		}
	}
	return f
}

// Register adds the finalizer name with its function after those registered before: at
// deletion the functions run in registration order. name must pass ValidateName (wrapped
// ErrInvalidName); a name registered twice is ErrAlreadyRegistered; a nil fn is ErrNilFunc.
func (f *Finalizers[T]) Register(name string, fn Func[T]) error {
	if f == nil {
		return fmt.Errorf("finalizer: register %q on a nil Finalizers", name)
	}
	if err := ValidateName(name); err != nil {
		return fmt.Errorf("finalizer: register: %w", err)
	}
	if fn == nil {
		return fmt.Errorf("finalizer: register %q: %w", name, ErrNilFunc)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.entries {
		if e.name == name {
			return fmt.Errorf("finalizer: register %q: %w", name, ErrAlreadyRegistered)
		}
	}
	f.entries = append(f.entries, entry[T]{name: name, fn: fn})
	return nil
}

// Names returns the registered finalizer names in registration order.
func (f *Finalizers[T]) Names() []string {
	if f == nil {
		return nil
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	names := make([]string, len(f.entries))
	for i, e := range f.entries {
		names[i] = e.name
	}
	return names
}

// Finalize brings obj's finalizers in line with the registry, writing through p (the client
// for obj's namespace). Call it at the start of Reconcile, with the object from the cache:
//
//	cm, res, err := fins.Finalize(ctx, client.CoreV1().ConfigMaps(cm.Namespace), cm)
//	if err != nil || res.Deleting {
//		return controller.Result{}, err
//	}
//	// normal work on cm, which now carries every registered finalizer
//
// When obj is not being deleted, the registered finalizers it lacks are added with one patch
// (Add's, preconditioned on obj's resourceVersion) and Updated is set: add them before creating
// anything they guard, so that nothing is created that no finalizer cleans up.
//
// When obj is being deleted (it has a deletionTimestamp), the functions of the registered
// finalizers still on it run in registration order; after each success that finalizer is
// removed with a patch of its own, so a cleanup that succeeded is not run again when a later
// one fails. At the first failure Finalize stops and returns a *FinalizeError wrapping the
// function's error (and records a Warning event if WithEventRecorder was given): the finalizer
// and the object stay, and the controller's error policy retries with backoff. A finalizer
// that is not on the object is skipped (its function runs only for objects that carry it).
// Finalized is set once none is left. A Conflict or other error of a patch is returned wrapped
// as well, for the same retry. When the server no longer has the object (NotFound), it is gone:
// Deleting and Finalized are set and the error is nil.
//
// The returned object is the server's latest answer, or obj itself when nothing was sent. obj
// is never modified. Finalizers of others are left alone.
func (f *Finalizers[T]) Finalize(ctx context.Context, p Patcher[T], obj T) (T, Result, error) {
	if err := check(p, obj); err != nil {
		return obj, Result{}, fmt.Errorf("finalizer: finalize: %w", err)
	}
	if f == nil {
		return obj, Result{}, fmt.Errorf("finalizer: finalize %s with a nil Finalizers", describe(obj))
	}
	f.mu.RLock()
	entries := f.entries // Register only appends: this prefix never changes.
	opts := f.opts
	f.mu.RUnlock()

	if obj.GetDeletionTimestamp() == nil {
		var missing []string
		for _, e := range entries {
			if !Has(obj, e.name) {
				missing = append(missing, e.name)
			}
		}
		if len(missing) == 0 {
			return obj, Result{}, nil
		}
		out, err := Add(ctx, p, obj, missing...)
		if apierrors.IsNotFound(err) {
			return obj, Result{Deleting: true, Finalized: true}, nil
		}
		if err != nil {
			return obj, Result{}, err
		}
		return out, Result{Updated: true}, nil
	}

	logger := klog.FromContext(ctx)
	res := Result{Deleting: true}
	cur := obj
	for _, e := range entries {
		if !Has(cur, e.name) {
			continue
		}
		logger.V(2).Info("Running finalizer", "object", klog.KObj(cur), "finalizer", e.name)
		if err := e.fn(ctx, cur); err != nil {
			fe := &FinalizeError{Finalizer: e.name, Object: key(cur), Err: err}
			if opts.recorder != nil {
				opts.recorder.Eventf(cur, corev1.EventTypeWarning, ReasonFinalizeFailed, "finalizer %s failed: %v", e.name, err)
			}
			return cur, res, fe
		}
		out, err := Remove(ctx, p, cur, e.name)
		if apierrors.IsNotFound(err) {
			// Someone removed the remaining finalizers and the object went away.
			res.Finalized = true
			return cur, res, nil
		}
		if err != nil {
			return cur, res, err
		}
		res.Updated = true
		cur = out
	}
	res.Finalized = true
	return cur, res, nil
}
