package finalizer

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// ReasonFinalizeFailed is the reason of the Warning event recorded when a finalize function
// fails (see WithEventRecorder).
const ReasonFinalizeFailed = "FinalizeFailed"

// Func cleans up what an object's finalizer guards (an external resource, a record elsewhere)
// before the API server may delete the object. It runs only while the object is being deleted
// and its finalizer is still on it, and until it succeeds: an error keeps the finalizer (and so
// the object) in place and is returned by Finalize, for the controller to retry with backoff.
//
// A Func normally runs once per deletion, but it must be idempotent: if the process stops, or
// the patch removing the finalizer fails (a Conflict with a concurrent write), between the
// cleanup and the removal, it runs again. obj is the object as Finalize got it, possibly from a cache: read
// it, do not modify it.
type Func[T Object] func(ctx context.Context, obj T) error

// Option configures Finalizers.
type Option func(*options)

type options struct {
	recorder record.EventRecorder
	clock    clock.PassiveClock
}

// RemovalMemory is how long Finalizers remembers the finalizers it removed from an object being
// deleted, to recognise a cached copy older than its own write (see Finalize). It is the time
// an informer gets to catch up with a write, the same five minutes kube-controller-manager's
// expectations allow. The memory holds a UID and the names removed per object finalized in
// that time; a record goes earlier when a copy shows the removals.
const RemovalMemory = 5 * time.Minute

// WithClock sets the clock that ages the memory of removed finalizers (RemovalMemory). The
// default is the real clock; tests pass a fake one.
func WithClock(c clock.PassiveClock) Option {
	return func(o *options) {
		if !object.IsNil(c) {
			o.clock = c
		}
	}
}

// WithEventRecorder records a Warning event with reason ReasonFinalizeFailed on the object, naming
// the finalizer and the error, each time a finalize function fails: that is where users look
// (kubectl describe) when an object does not go away. Without it (the default) failures are only
// returned and logged by the controller. A manager.Manager gives one with EventRecorderFor.
func WithEventRecorder(r record.EventRecorder) Option {
	return func(o *options) {
		if !object.IsNil(r) {
			o.recorder = r
		}
	}
}

// Result says what Finalize did and what the Reconcile should do next.
type Result struct {
	// Updated is true when Finalize patched the object: it added the missing finalizers, or
	// removed finalizers whose functions succeeded. (controller-runtime's Result has the same
	// field; here the patch is already sent.)
	Updated bool
	// Deleting is true when the object is being deleted: it has a deletionTimestamp, or it is a
	// cached copy older than a finalizer removal of this registry (see Finalize). The Reconcile
	// must not do its normal work then (create or update what the object asks for); it
	// returns.
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

// removal is what one Finalizers removed from one object being deleted, and when it last did.
type removal struct {
	names []string
	at    time.Time
}

// Finalizers is an ordered registry of named finalize functions for objects of kind T. The
// Reconcile of T's controller calls Finalize first: it keeps the registered finalizers on every
// live object and, once the object is being deleted, runs their functions in registration
// order, removing each finalizer after its function succeeded. Register before the controller
// starts; Register and Finalize are safe for concurrent use. The zero value is ready to use,
// without an event recorder.
type Finalizers[T Object] struct {
	mu      sync.Mutex
	entries []entry[T]
	opts    options
	// removed remembers, per UID of an object being deleted, the finalizers this registry
	// removed, for RemovalMemory; pruned is when it last dropped expired records.
	removed map[types.UID]*removal
	pruned  time.Time
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
// ErrInvalidName); a name registered twice is ErrAlreadyRegistered; a nil fn is ErrInvalidInput.
func (f *Finalizers[T]) Register(name string, fn Func[T]) error {
	if f == nil {
		return fmt.Errorf("finalizer: register %q on a nil Finalizers", name)
	}
	if err := ValidateName(name); err != nil {
		return fmt.Errorf("finalizer: register: %w", err)
	}
	if fn == nil {
		return fmt.Errorf("finalizer: register %q: nil finalize function: %w", name, ErrInvalidInput)
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
	f.mu.Lock()
	defer f.mu.Unlock()
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
// as well, for the same retry. So is NotFound: the object is gone, or p addresses another
// namespace than obj's; the retry's fresh read from the lister tells which (a Reconcile returns
// nil for an object its lister no longer has), where treating NotFound as success would hide a
// misdirected client behind cleanups that never get their finalizers removed.
//
// An informer's copy lags behind the registry's own writes: right after a finalizer was removed
// the cache may still show it, and the Reconcile that the removal's own watch event (or a retry)
// triggers would run that cleanup again. So the registry remembers, per object UID and for
// RemovalMemory, which finalizers it removed from an object being deleted (finalizers cannot be
// added back to it), and a copy that still shows one of them is left alone: Finalize returns
// Deleting with nothing done and a nil error, and the watch event of the removal requeues the
// object.
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
	f.mu.Lock()
	entries := f.entries // Register only appends: this prefix never changes.
	opts := f.opts
	f.mu.Unlock()

	logger := klog.FromContext(ctx)
	if f.stale(obj) {
		// The cache has not caught up with a removal of ours: running the functions of the
		// finalizers it still shows would repeat cleanups that succeeded (and a live-looking
		// copy would have the Reconcile recreate what they cleaned up). The watch event of that
		// removal is on its way and requeues the object.
		logger.V(2).Info("Skipping a cached copy older than a finalizer removal of ours", "object", klog.KObj(obj))
		return obj, Result{Deleting: true}, nil
	}
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
		if err != nil {
			return obj, Result{}, err
		}
		return out, Result{Updated: true}, nil
	}

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
		if err != nil {
			return cur, res, err
		}
		f.remember(obj.GetUID(), e.name)
		res.Updated = true
		cur = out
	}
	res.Finalized = true
	return cur, res, nil
}

func (f *Finalizers[T]) now() time.Time {
	if f.opts.clock == nil {
		return time.Now()
	}
	return f.opts.clock.Now()
}

// remember records that name was removed from the object uid, which is being deleted. The API
// server allows no new finalizer on an object being deleted, so a copy of uid that shows name
// again can only be older than that removal.
func (f *Finalizers[T]) remember(uid types.UID, name string) {
	if uid == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.removed == nil {
		f.removed = map[types.UID]*removal{}
	}
	r := f.removed[uid]
	if r == nil {
		r = &removal{}
		f.removed[uid] = r
	}
	r.names = append(r.names, name)
	r.at = f.now()
}

// stale reports whether obj still shows a finalizer this registry removed from it: a copy from
// before that removal (with or without a deletionTimestamp). A copy that shows none of them is at least as new as the removals, and
// an informer never goes back to an older copy, so the record is dropped then. Records of
// objects that went away are dropped after RemovalMemory.
func (f *Finalizers[T]) stale(obj T) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	if now.Sub(f.pruned) >= RemovalMemory/5 {
		f.pruned = now
		for uid, r := range f.removed {
			if now.Sub(r.at) >= RemovalMemory {
				delete(f.removed, uid)
			}
		}
	}
	r := f.removed[obj.GetUID()]
	if r == nil {
		return false
	}
	if slices.ContainsFunc(r.names, func(n string) bool { return Has(obj, n) }) {
		return true
	}
	delete(f.removed, obj.GetUID())
	return false
}
