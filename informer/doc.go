// Package informer is a typed layer over client-go's shared informers: the
// watch-backed caches every Kubernetes controller reads from.
//
// client-go's SharedInformerFactory gives one List+Watch per resource however
// many controllers ask, but hands out interface{} objects, tombstones a
// handler must unwrap by hand (or crash on), and caches whole objects
// including server-side-apply bookkeeping. This package keeps client-go's
// machinery (Reflector, DeltaFIFO, SharedIndexInformer: the code every
// cluster runs) and adds:
//
//   - one entry point, For[T], for every built-in type the client-go factory
//     serves, mapped through client-go's scheme so no per-type code exists;
//     ForMetadata for metadata-only caches and ForResource for custom
//     resources, owned by the same Factory;
//   - typed listers (Lister[T]) with apierrors NotFound answers, typed
//     indexes, and built-in indexes by namespace and by controller owner UID;
//   - typed handlers (Handler[T], HandlerFuncs[T]) that receive T on delete
//     whether or not the informer saw the delete (tombstones are unwrapped),
//     and report objects of the wrong type to an error handler instead of
//     panicking;
//   - lean caches: metadata.managedFields is stripped on entry by default,
//     plus per-type transforms (WithTransform);
//   - enqueue helpers (EnqueueKey, EnqueueControllerOf, EnqueueMapped) that
//     connect events to a work queue;
//   - WaitForCacheSync whose error names each informer that did not sync.
//
// # Use
//
//	f := informer.NewFactory(clientset)
//	pods, err := informer.For[*corev1.Pod](f)
//	if err != nil { ... }
//	_, err = pods.AddHandler(informer.EnqueueControllerOf[*corev1.Pod](queue,
//		appsv1.SchemeGroupVersion.WithKind("ReplicaSet")))
//	f.Start(ctx)
//	defer f.Shutdown()
//	if err := f.WaitForCacheSync(ctx); err != nil { ... } // names what did not sync
//	pod, err := pods.Lister().Get("default", "web-0")
//
// # Choices worth knowing
//
// For returns an error (matching ErrUnsupportedType), not a panic, for a T
// the factory cannot serve.
//
// Handler methods are HandleAdd, HandleUpdate and HandleDelete, so that
// HandlerFuncs can have the fields OnAdd, OnUpdate and OnDelete. OnDelete
// gets the T from a tombstone too; a handler that needs to know the delete
// was inferred (the object may be stale) sets OnDeleteFinalStateUnknown or
// implements Handler and reads DeleteInfo.
//
// A resync update is one whose old and new resourceVersion are equal
// (IsResync); HandlerFuncs.SkipResync and WithoutResync drop them.
// EnqueueKey enqueues resyncs (that is what resync is for), EnqueueControllerOf
// does not (the owner resyncs itself), as in kube-controller-manager.
//
// Objects handed out are the cache's: never mutate them.
//
// Testing with k8s.io/client-go/kubernetes/fake: the fake stores objects
// with the resourceVersion the test gave them, so two versions of an object
// usually both have "" and client-go's informer treats the update as a
// resync, delivering it only to handlers that asked for resyncs. Set
// resourceVersion in tests, or add a reactor that stamps one.
package informer
