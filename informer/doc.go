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
//   - one configuration value, Options, for a factory (NewFactory), whose
//     zero value is every default; per-type settings are Options.ByObject
//     entries built by ByObject, as controller-runtime's cache.Options;
//   - one entry point, For[T], for every built-in type client-go's clientset
//     serves, mapped through client-go's scheme so no per-type code exists
//     (Factory.SharedInformerFactory serves client-go's generated informers
//     from the same informers, for code written against them);
//     ForMetadata for metadata-only caches and ForResource for custom
//     resources, owned by the same Factory;
//   - typed listers (Lister[T]) with apierrors NotFound answers, typed
//     indexes, and built-in indexes by namespace and by controller owner UID;
//   - typed handlers (Handler[T], HandlerFuncs[T]) that receive T on delete
//     whether or not the informer saw the delete (tombstones are unwrapped),
//     and report objects of the wrong type to an error handler instead of
//     panicking;
//   - lean caches: metadata.managedFields is stripped on entry and equal
//     sub-objects of cached objects are shared by default, plus per-type
//     transforms (ObjectOptions.Transform);
//   - per-informer scoping: For[T](f, InNamespaces[T](...),
//     WithLabelSelector[T](...), WithFieldSelector[T](...)) caches only the
//     objects a controller reads (one client-go informer per namespace
//     behind one Informer[T]); a factory serves each type with one scope;
//   - namespaces that change at run time: InNamespaceSet[T](set) follows a
//     NamespaceSet (Set, Add, Remove, or NamespacesMatching a label
//     selector); a namespace added is listed and replayed to the handlers,
//     one removed leaves them as deletes with DeleteInfo.OutOfScope (not
//     real deletes), and reads outside the set fail with
//     ErrNamespaceNotWatched, never NotFound;
//   - shards of the API server's sharded list and watch that change at run
//     time: InShardSet[T](set), or Options.ShardSet for every informer of a
//     factory, follows a ShardSet of shard selectors
//     (ListOptions.ShardSelector, alpha since Kubernetes 1.36) the same way,
//     one client-go informer per shard (package sharding's server-side
//     ring);
//   - EnqueueMapped, which connects events to a work queue of your own
//     (controllers use controller.Watch, built on it);
//   - WaitForCacheSync whose error names each informer that did not sync.
//
// # Use
//
//	f := informer.NewFactory(clientset, informer.Options{})
//	pods, err := informer.For[*corev1.Pod](f)
//	if err != nil { ... }
//	_, err = pods.AddHandler(informer.HandlerFuncs[*corev1.Pod]{
//		OnAdd: func(p *corev1.Pod, _ bool) { ... },
//	})
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
// A factory serves each type with one scope: asking For[T] again with
// another scope (or none) is a *ScopeConflictError rather than
// a second, different cache of T that two controllers would silently read
// apart. Use one scope, or a second Factory for a deliberately separate
// cache. Transforms stay factory options (ObjectOptions[T].Transform): one cache per
// type per factory makes them per informer already.
//
// Handler methods are HandleAdd, HandleUpdate and HandleDelete, so that
// HandlerFuncs can have the fields OnAdd, OnUpdate and OnDelete. OnDelete
// gets the T from a tombstone too; a handler that needs to know the delete
// was inferred (the object may be stale) sets OnDeleteFinalStateUnknown or
// implements Handler and reads DeleteInfo.
//
// A resync update is one whose old and new resourceVersion are equal
// (IsResync); HandlerFuncs.SkipResync drops them.
// EnqueueMapped enqueues resyncs (that is what resync is for).
//
// Objects handed out are the cache's: never mutate them.
//
// # Lifetimes
//
// An informer lives as long as its factory, unless it is only handed out
// through views: f.HeldUntil(ctx) is a *Factory whose informers are held
// until ctx ends. Once every view holding an informer ended, and the
// factory itself never handed it out, it stops alone after a grace
// (Options.ReleaseGrace) and its cache is freed. A controller started and
// stopped inside a running process (manager.AddWhenServed builds one per
// term) thus releases what only it used. See docs/design/dynamic-watches.md.
//
// # Shared sub-objects
//
// The Pods of one ReplicaSet carry equal labels, owner references,
// tolerations, env lists, probes, resource lists and volume sources; so do
// the objects of most other controllers. The factory's default transform
// ends by making equal sub-objects one instance, shared by every cached
// object that holds them (hash-consing): about a third of the heap of a
// cache of Deployment-managed Pods (docs/performance.md). The rules:
//
//   - It runs last, after managedFields stripping and the ObjectOptions.Transform
//     functions, for typed, metadata-only and typed custom-resource
//     informers alike; every API type works through one reflective plan per
//     Go type.
//   - Only sub-objects that serialise identically are shared: equal
//     scalars and strings, equal quantities, nil kept apart from empty. The
//     object's own struct is never shared, so each object keeps its name,
//     UID and resourceVersion.
//   - A sub-object becomes shared the second time it is seen; the table of
//     shared instances holds them weakly and forgets each once no cached
//     object uses it. Strings seen twice are interned (package unique).
//   - Quantities inside shared sub-objects have their string form cached
//     before they are shared, so String only reads. Quantity.AsDec and
//     ToDec rewrite their receiver: call them on a copy.
//   - Quantities are compared through their private field layout, checked
//     at first use: should a future apimachinery change it, quantities and
//     the sub-objects holding them are left unshared (logged once), and
//     everything else is shared as before.
//
// Sharing relies on the read-only contract above: a write to a cached
// object can now change other cached objects too. DeepCopy copies the shared
// parts, so a copy is the caller's own. Options.DisableSharing turns sharing off.
// The sharing itself lives in internal/hashcons.
//
// # Mutation detector
//
// Options.MutationDetector fingerprints every object entering the cache and
// reports, every second and on Factory.CheckMutations, each
// cached object changed in place since, as a *MutationError naming the
// informer, the object and the first changed field
// (metadata.labels["app"]). It is client-go's cache mutation detector with
// the culprit named, and is meant for tests: testkit turns it on.
//
// # Cache memory
//
// Each informer's cache is accounted for as objects enter it (the walk that
// shares an object's sub-objects also sizes it, rounding each allocation as
// Go's allocator does) and leave it (by UID): Factory.CacheMemory gives,
// per informer, the objects, the estimated bytes (shared sub-objects
// counted once), what nothing shared would take, and the largest
// namespaces. A Manager exports it as ctrlkit_informer_* series and at
// /debug/informers. Options.DisableAccounting turns it off. Deletions reach
// the accounting through the informer's handlers (AddHandler); only an
// informer that starts without one gets a client-go listener for it.
//
// Memory budgets (Options.MemoryBudget for the factory,
// ObjectOptions.MemoryBudget in Options.ByObject for one informer) are checked every 10 seconds (Options.BudgetCheckInterval), with a
// policy: BudgetWarn logs, BudgetFailReadiness also fails CheckMemoryBudget
// (a Manager's /readyz), BudgetDegrade also makes the informers marked
// ObjectOptions.Degradable cache metadata only from then on. An informer that caches
// whole Pods, Secrets, ConfigMaps or Events of the whole cluster with no
// selector is logged once, as the usual cause of memory growing with the
// cluster. Options.StalenessCheck compares each informer's last resourceVersion
// with the API server's (Factory.Staleness). docs/sizing.md says what each
// option saves.
//
// # Has the cache caught up?
//
// VersionOf takes a consistent read of an informer's resource in its scope
// (a list of one object, in each of its namespaces) and returns it as a
// Version: Reached tells without a request whether the cache has applied it,
// Confirm compares the cache with a consistent list (how the cache of a quiet
// resource, behind the cluster's resourceVersion yet current, proves it), Wait
// returns once it has. controller.Options.Freshness is built on it.
//
// # Informer metrics
//
// Options.InformerName gives the factory a process-unique name under which
// its typed informers report client-go's informer series (the store's
// resourceVersion, processing latency, and a queue length that stays 0:
// handlers are called as the cache applies each change) to the provider
// package manager registers, exporting kube's informer_* series. The
// factory holds the name until Shutdown.
//
// Testing with k8s.io/client-go/kubernetes/fake: the fake stores objects
// with the resourceVersion the test gave them, so two versions of an object
// usually both have "" and the informer treats the update as a resync: once
// any handler of the informer resyncs (Options.Resync, or a handler's own
// period), it reaches only the handlers whose resync is due, as in client-go.
// Set resourceVersion in tests, or add a reactor that stamps one.
package informer
