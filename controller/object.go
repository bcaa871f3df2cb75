package controller

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/finalizer"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/object"
)

// ObjectReconciler reconciles one object, already read from the cache: the shape of
// controller-runtime's reconcile.ObjectReconciler. AsReconciler turns it into the
// Reconciler[Key] a Controller runs, and does what every such Reconcile starts with: the
// lister read, the not-found case and the deletion branch.
//
// obj is the informer cache's own object, not a copy, and must not be modified (the contract
// of every lister). A Reconcile that changes the object itself changes a copy: client.PatchStatus
// and client.CreateOrPatch copy it for you, DeepCopy does otherwise. obj is never nil and never
// being deleted (see AsReconciler). The result and the error mean what they mean for a
// Reconciler: the error policy, Terminal and Result's requeues all apply.
type ObjectReconciler[T informer.Object] interface {
	Reconcile(ctx context.Context, obj T) (Result, error)
}

// ObjectReconcilerFunc adapts a function to an ObjectReconciler.
type ObjectReconcilerFunc[T informer.Object] func(ctx context.Context, obj T) (Result, error)

// Reconcile calls f(ctx, obj).
func (f ObjectReconcilerFunc[T]) Reconcile(ctx context.Context, obj T) (Result, error) {
	return f(ctx, obj)
}

// ObjectOption configures AsReconciler. It is typed on the object, so an option for another
// type is a compile error.
type ObjectOption[T informer.Object] interface {
	applyToObject(*objectReconciler[T]) error
}

// WithFinalizers makes AsReconciler keep the finalizers of registry f on every object and run
// them when the object is deleted, writing through p: a ctrlkit client of T
// (client.Client[T], *customresource.Client[T]) as it is, or
// anything with their namespaced Patch method (finalizer.NamespacedPatcher). Before each
// Reconcile of a live object, f.Finalize adds the registered finalizers it lacks (one patch),
// so that nothing is created that no finalizer cleans up; an object being deleted has the
// functions of its registered finalizers run in registration order, each finalizer removed
// after its function succeeded, and never reaches the ObjectReconciler. Errors are Finalize's
// (a *finalizer.FinalizeError for a failed function): retried by the error policy, not at all
// when the function returned a Terminal error. Register every finalizer of T in f: giving the
// option twice is an error. Writes through ctrlkit's clients are fenced like any other
// (Options.Fences.Auto).
func WithFinalizers[T informer.Object](f *finalizer.Finalizers[T], p finalizer.NamespacedPatcher[T]) ObjectOption[T] {
	return finalizersOption[T]{f: f, p: p}
}

type finalizersOption[T informer.Object] struct {
	f *finalizer.Finalizers[T]
	p finalizer.NamespacedPatcher[T]
}

func (o finalizersOption[T]) applyToObject(r *objectReconciler[T]) error {
	switch {
	case o.f == nil:
		return errors.New("nil finalizers registry")
	case object.IsNil(o.p):
		return errors.New("nil patcher")
	case r.finalizers != nil:
		return errors.New("given twice: register every finalizer of the type in one registry")
	}
	r.finalizers, r.patcher = o.f, o.p
	return nil
}

// AsReconciler returns the Reconciler[Key] that reads each key's object from lister and hands
// it to r, as controller-runtime's reconcile.AsReconciler does, with the cases every Reconcile
// otherwise starts with handled:
//
//   - not in the cache: the object was deleted. The Reconcile returns Result{} and nil; its
//     children go with it through their owner references (the garbage collector's work), and
//     what no owner reference covers is the job of a finalizer.
//   - in the cache under another Go type (a custom resource that failed conversion): a
//     Terminal error, since only a new version of the object can fix it (the informer
//     reported it already).
//   - being deleted (a deletionTimestamp): r is not called. With WithFinalizers the
//     registry's functions run first (cleanup belongs in finalizers, not in Reconcile); a
//     deleting object has nothing left to converge, and a Reconcile that created children now
//     would race with their collection. Use a Reconciler[Key] to act on deleting objects.
//   - otherwise: with WithFinalizers, missing finalizers are added; then r.Reconcile gets the
//     object and its Result and error are returned as they are.
//
// The key's Namespace is "" for cluster-scoped objects. Lines are logged with the Reconcile's
// contextual logger, which already names the controller and the key.
//
// r gets the cache's own object, not a deep copy. Copying it before every Reconcile would
// allocate and walk the whole object (status and managed fields included) on every pass,
// resyncs included, while most passes only read it; the passes that write change a copy of
// what they write (client.PatchStatus, client.CreateOrPatch, DeepCopy), as with a lister. The
// price is the lister's contract: r must not modify obj. With the factory's structural
// sharing (on unless informer.Options.DisableSharing) a modification can show in other cached objects
// too; testkit's mutation detector, on by default, fails a test whose Reconcile modifies it.
//
// A nil lister or r, or an invalid option, is an error matching ErrInvalidOptions.
func AsReconciler[T informer.Object](lister informer.Lister[T], r ObjectReconciler[T], opts ...ObjectOption[T]) (Reconciler[Key], error) {
	if object.IsNil(lister) {
		return nil, &OptionsError{Field: "AsReconciler", Reason: "nil lister"}
	}
	if object.IsNil(r) {
		return nil, &OptionsError{Field: "AsReconciler", Reason: "nil ObjectReconciler"}
	}
	o := &objectReconciler[T]{lister: lister, r: r}
	for i, opt := range opts {
		if object.IsNil(opt) {
			return nil, &OptionsError{Field: "AsReconciler", Reason: fmt.Sprintf("option %d is nil", i)}
		}
		if err := opt.applyToObject(o); err != nil {
			return nil, &OptionsError{Field: "WithFinalizers", Reason: err.Error()}
		}
	}
	return o, nil
}

// objectReconciler is the Reconciler AsReconciler returns.
type objectReconciler[T informer.Object] struct {
	lister     informer.Lister[T]
	r          ObjectReconciler[T]
	finalizers *finalizer.Finalizers[T] // nil without WithFinalizers
	patcher    finalizer.NamespacedPatcher[T]
}

func (o *objectReconciler[T]) Reconcile(ctx context.Context, key Key) (Result, error) {
	logger := klog.FromContext(ctx)
	obj, err := o.lister.Get(key.Namespace, key.Name)
	switch {
	case apierrors.IsNotFound(err):
		logger.V(2).Info("Object is gone; its children are left to their owner references")
		return Result{}, nil
	case errors.Is(err, informer.ErrUnexpectedType):
		return Result{}, Terminal(err)
	case err != nil:
		return Result{}, err
	}
	if o.finalizers != nil {
		out, res, err := o.finalizers.Finalize(ctx, finalizer.InNamespace(o.patcher, obj.GetNamespace()), obj)
		if err != nil {
			return Result{}, err
		}
		if res.Deleting {
			logger.V(2).Info("Object is being deleted; not reconciled", "finalized", res.Finalized, "finalizers", out.GetFinalizers())
			return Result{}, nil
		}
		obj = out
	}
	if obj.GetDeletionTimestamp() != nil {
		logger.V(2).Info("Object is being deleted; not reconciled", "finalizers", obj.GetFinalizers())
		return Result{}, nil
	}
	return o.r.Reconcile(ctx, obj)
}
