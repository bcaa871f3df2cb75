// Package ownerref lets a controller own its children by controller reference, the way
// kube-controller-manager's ReplicaSet, Job and StatefulSet controllers do.
//
// A child belongs to the owner whose UID is in its controller reference (the one
// ownerReference with controller: true), not to whoever's selector happens to match it. Each
// sync the controller lists candidate children from its cache and claims them: orphans that
// match the selector are adopted (a controller reference is patched in), children that no
// longer match are released (the reference is patched out), and children controlled by
// someone else are left alone. The garbage collector then deletes a child with its owner,
// and two controllers with overlapping selectors never fight over one object.
//
// # When to use it
//
// In any controller that creates children and finds them again by label selector. Build a
// Claimer per sync of the owner and call ClaimObjects with what the informer lists; act only
// on the objects it returns.
//
// # The rules
//
// ClaimObjects applies kube-controller-manager's ClaimObject to each object, in this order:
// an object controlled by another UID is ignored; one controlled by this owner is kept while
// it matches (even while the owner is being deleted, since keeping needs no write) and
// released when it does not (unless the owner is being deleted); an orphan is adopted only if
// the owner is not being deleted, it matches, it is not being deleted itself, and for a
// namespaced owner it is in the owner's namespace. Before the first adoption canAdopt runs,
// once per Claimer: use RecheckOwner, which GETs the owner uncached and refuses when it has a
// deletionTimestamp or another UID, because the cache may not have seen the deletion yet.
//
// Patches carry the child's metadata.uid as a precondition (UID is immutable, so the API
// server refuses a patch aimed at a re-created object with the same name). By default they
// are strategic merge patches, as kube-controller-manager sends; for custom resources set
// ClaimerOptions.PatchType to types.MergePatchType, which writes the whole new
// ownerReferences list with the object's resourceVersion (a stale object gets a Conflict).
// A NotFound answer means the object is gone (not ours, no error), and so does an Invalid
// answer to a release. Other failures are aggregated; the remaining objects are still
// claimed.
//
// An empty UID identifies nothing (ErrMissingUID): a Claimer whose owner has no UID claims
// nothing, IsControlledBy is false for an owner or a controller reference without one, and a
// child without one is neither adopted nor released, since its patch would have no
// precondition. Objects read from an API server always have a UID.
//
// A controller that creates its children sets the reference itself before the create:
// SetControllerReference (controller-runtime's name and rules) adds it, and refuses an object
// that another owner already controls (ErrAlreadyOwned), an owner without UID, and an owner
// in another namespace or a namespaced owner of a cluster-scoped object (ErrInvalidOwner).
// A controller that writes its children by server-side apply gives the apply configuration
// (client-go's corev1ac.ConfigMap(name, namespace), say) the same reference under the same
// rules with SetControllerReferenceApplyConfig, then sends it with client.ApplyConfig.
//
// # Porting from controller-runtime
//
// The helpers of controller-runtime's controllerutil that edit owner references in memory are
// here under their names, with the scheme argument turned into options (the owner's kind is
// found without one for built-in types and for objects that carry their apiVersion and kind):
//
//	controller-runtime                             ctrlkit
//	SetControllerReference(o, c, scheme, opts...)  SetControllerReference(o, c, opts...)
//	SetOwnerReference(o, c, scheme, opts...)       SetOwnerReference(o, c, opts...)
//	RemoveOwnerReference(o, c, scheme)             RemoveOwnerReference(o, c, opts...)
//	RemoveControllerReference(o, c, scheme)        RemoveControllerReference(o, c, opts...)
//	HasOwnerReference(c.GetOwnerReferences(), o,   HasOwnerReference(c, o, opts...)
//	  scheme)
//	HasControllerReference(c)                      HasControllerReference(c)
//	WithBlockOwnerDeletion(b)                      WithBlockOwnerDeletion(b)
//	(by hand: metav1ac.OwnerReference()...)        SetControllerReferenceApplyConfig(o, ac, opts...)
//	the scheme argument                            WithScheme(scheme), or WithKind(gvk)
//	metav1.IsControlledBy(c, o)                    IsControlledBy(c, o) (empty UIDs match nothing)
//
// Which to choose: SetControllerReference for the children a controller creates and finds
// again (one controller per object; claims, EnqueueControllerOf and IsControlledBy go by
// it); SetOwnerReference for objects that should only be deleted with their owner, or have
// several owners. SetControllerReference sets blockOwnerDeletion true unless
// WithBlockOwnerDeletion(false) says otherwise; SetOwnerReference leaves it unset unless the
// option sets it.
//
// Differences, each deliberate: both Set functions refuse an owner without a UID
// (ErrMissingUID), which controller-runtime accepts and the API server then refuses;
// RemoveOwnerReference removes every reference to the owner, not only the first; errors match
// sentinels (ErrNotOwned, ErrInvalidOwner, ErrUnknownKind, ErrNilObject) and name the objects;
// a nil object is an error, never a panic. As in controller-runtime, SetOwnerReference,
// RemoveOwnerReference, RemoveControllerReference and HasOwnerReference recognise the owner by
// API group, kind and name, not by version or UID, so a reference to an owner deleted and
// re-created under its name counts as a reference to it (IsControlledBy, by UID, does not).
//
// Any client works through Patcher: PodsPatcher for Pods, ClientPatcher for any client-go
// typed client or the dynamic client, PatcherFunc for anything else.
//
// # Example
//
//	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
//	if err != nil {
//		return err
//	}
//	canAdopt := ownerref.RecheckOwner(rs, ownerref.GetFresh(client.AppsV1().ReplicaSets(rs.Namespace).Get, rs.Name))
//	claimer := ownerref.NewClaimer[*corev1.Pod](rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
//		selector, canAdopt, ownerref.PodsPatcher(client))
//	pods, err := claimer.ClaimObjects(ctx, cachedPods) // the Pods this ReplicaSet now owns
//	if err != nil {
//		return err // requeue the owner; the failed claims are retried next sync
//	}
package ownerref
