// Package finalizer keeps finalizers on objects and runs the cleanup they stand for.
//
// # When an object needs a finalizer
//
// A controller that creates something the API server does not own — a cloud load balancer, a
// DNS record, a row in a database, an object in another cluster — must clean it up when the
// object asking for it is deleted. Owner references and garbage collection cannot do that, and
// a controller that only reacts to the delete event misses deletions that happen while it is
// down. A finalizer closes the gap: while an object's metadata.finalizers is not empty, a
// delete only sets its deletionTimestamp, and the API server removes the object once the last
// finalizer is gone. The controller sees the deletionTimestamp, cleans up, and removes its
// finalizer. (Objects that only own other Kubernetes objects need no finalizer of their own:
// owner references do it.)
//
// # Has, Add, Remove
//
// Has tells whether an object carries a finalizer. Add and Remove write metadata.finalizers
// with one JSON merge patch each, carrying the object's resourceVersion as a precondition:
// when the object changed since it was read, the API server answers 409 Conflict instead of
// writing a list computed from an old one, so a finalizer another controller added meanwhile is
// never lost. Return the Conflict from Reconcile and the retry starts from a fresh read. They
// send nothing when there is nothing to change, never modify the object passed in (it may come
// from a cache), and check names as the API server does (ValidateName: "example.com/cleanup").
// They write through a Patcher, which client-go's typed clients, customresource.Client and the
// dynamic client already are.
//
// Merge patch plus resourceVersion, rather than a JSON patch with "test" operations, because a
// 409 Conflict is the answer every client and ctrlkit's error policy understand
// (apierrors.IsConflict), while a failed "test" comes back as 422 Invalid, like a malformed
// request; and because merge patches behave the same on built-in types and custom resources.
// The price: any concurrent write to the object, not only to its finalizers, makes the patch
// conflict and the reconcile retry.
//
// # The registry
//
// Finalizers[T] holds named finalize functions (Func) in registration order. The Reconcile of
// T's controller calls Finalize first, with the object from its cache:
//
//   - while the object is alive, Finalize adds the registered finalizers it lacks (one patch),
//     before the Reconcile creates anything they guard;
//   - once it is being deleted, Finalize runs the functions of the registered finalizers still
//     on it, in registration order (register the cleanup of what depends on something else
//     first), and removes each finalizer with a patch of its own right after its function
//     succeeded, so a cleanup that succeeded is not repeated when a later one fails. Result
//     says the object is being deleted (the Reconcile must return without doing its normal
//     work) and, once none of the registered finalizers is left, that it is finalized: the
//     API server deletes it when the finalizers of others are gone too.
//
// When a function fails, Finalize stops there and returns a *FinalizeError: the finalizer,
// those after it and the object stay, a Warning event (reason FinalizeFailed) is recorded when
// the registry has an event recorder (WithEventRecorder), and the controller's error policy
// retries with backoff until the function succeeds. A function that returns a
// controller.Terminal error is not retried, and the object stays until something requeues it
// (or someone removes the finalizer by hand).
//
// Each function runs once per deletion in the normal course: its finalizer is removed right
// after it succeeded (one patch per finalizer, rather than one for all at the end, so neither a
// later failure nor a restart between two cleanups repeats the earlier one), and a cached copy
// older than such a removal is recognised and skipped (see Finalize). Functions must still be
// idempotent: a crash, or a Conflict on the patch that removes the finalizer, between the
// cleanup and the removal makes the function run again.
//
// Names follow controller-runtime's pkg/finalizer where users know them (Finalizers, Register,
// Finalize, Result.Updated). Unlike controller-runtime's, Finalize writes the object itself
// (it does not leave the update to the caller), runs the functions in registration order
// rather than in map order, and stops at the first failure.
//
// # Porting from controller-runtime
//
// controller-runtime's controllerutil helpers edit the object in memory and leave the write to
// the caller; Add and Remove here write the server themselves, with a precondition. The
// in-memory helpers are kept beside them for code that edits the object before a write it
// makes anyway (a Create, an Update of the whole object):
//
//	controller-runtime                      ctrlkit
//	controllerutil.AddFinalizer(o, n)       AddToObject(o, n): in memory, reports whether added
//	controllerutil.RemoveFinalizer(o, n)    RemoveFromObject(o, n): in memory, every occurrence
//	controllerutil.ContainsFinalizer(o, n)  Has(o, n)
//	AddFinalizer + client.Update            Add(ctx, p, o, n...): one preconditioned patch
//	RemoveFinalizer + client.Update         Remove(ctx, p, o, n...): one preconditioned patch
//	finalizer.NewFinalizers, Register       New[T](), Register
//	Finalizers.Finalize + client.Update     Finalizers.Finalize (writes the object itself)
//
// Choose Add and Remove when the finalizer is the only change: the patch cannot lose a
// finalizer another writer added meanwhile, and nothing is sent when nothing changes. Choose
// AddToObject and RemoveFromObject when the change rides on another write, or to port code as
// it is. Like controller-runtime's, the in-memory helpers do not validate names (Add does,
// with ValidateName): a name without a domain prefix is refused by the API server for built-in
// types only when the object is written. Unlike controller-runtime's, they accept a nil
// object (nothing changes) and never write into the slice the object holds, which a cached
// object's shallow copy may share.
package finalizer
