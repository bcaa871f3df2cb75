// Package controller runs Reconcilers the way kube-controller-manager runs its
// controllers: keys from informer events go into a rate-limited,
// deduplicating work queue; a fixed number of workers take keys out and call
// Reconcile; the result decides whether the key is forgotten, retried with
// backoff or requeued later. A Manager runs many controllers over one shared
// informer factory, behind leader election and feature gates, serves health
// probes and Prometheus metrics, records events, and shuts down in order.
//
// # When to use it
//
// For any level-triggered controller: write a Reconciler that reads the
// desired and the observed state for one key and makes them agree, and let
// this package own the loop, the error policy, the queue and the shutdown.
// Use Controller alone in tests or small tools; use a manager.Manager in a
// binary.
//
// # A controller in a few lines
//
//	r := controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
//		rs, err := rsInformer.Lister().Get(key.Namespace, key.Name)
//		if apierrors.IsNotFound(err) {
//			return controller.Result{}, nil // deleted: nothing to do
//		}
//		if err != nil {
//			return controller.Result{}, err // retried with backoff
//		}
//		if rs.Spec.Replicas == nil {
//			return controller.Result{}, controller.Terminal(errors.New("spec.replicas unset")) // never retried
//		}
//		// ... create or delete pods ...
//		return controller.Result{}, nil
//	})
//	c, _ := controller.New("replicaset", r, controller.Options[controller.Key]{Workers: 5})
//	controller.Watch(c, rsInformer, controller.EnqueueObject)
//	controller.Watch(c, podInformer, controller.EnqueueControllerOf[*corev1.Pod](rsInformer))
//
//	mgr, _ := manager.New(manager.Options{
//		Client:          client,
//		LeaderElection:  &leCfg,      // --leader-elect and friends (leaderelection.Config.AddFlags)
//		FeatureGate:     gate,        // --feature-gates (featuregate.Gate.AddFlag)
//		HealthProbeAddr: ":8081",     // /healthz, /readyz
//		MetricsAddr:     ":8080",     // /metrics
//	})
//	mgr.Add(c)
//	if err := mgr.Start(ctx); err != nil { // returns when ctx ends, or on a fatal error
//		klog.FromContext(ctx).Error(err, "manager failed")
//		os.Exit(1)
//	}
//
// with rsInformer and podInformer from informer.For on mgr.Factory().
//
// # Object reconcilers
//
// Most Reconciles start alike: read the key's object from the lister, return when it is
// gone, keep finalizers on it and run their cleanups when it is deleted. AsReconciler does
// that part (as controller-runtime's reconcile.AsReconciler does) and hands an
// ObjectReconciler the object itself, live and carrying the registered finalizers; an object
// being deleted never reaches it, since cleanup belongs in finalizers (WithFinalizers):
//
//	fins := finalizer.New[*v1alpha1.PodSet]()
//	fins.Register("example.com/record", removeRecord)
//	r, err := controller.AsReconciler(podsets.Lister(), controller.ObjectReconcilerFunc[*v1alpha1.PodSet](
//		func(ctx context.Context, ps *v1alpha1.PodSet) (controller.Result, error) {
//			// ... children with client.CreateOrUpdate ...
//			_, _, err := client.PatchStatus(ctx, podsetClient, ps, setStatus)
//			return controller.Result{}, err
//		}), controller.WithFinalizers(fins, podsetClient))
//	c, err := controller.New("podset", r, controller.Options[controller.Key]{Fences: &controller.Fences{Auto: true}})
//
// The object is the cache's own, not a copy (see AsReconciler for why): never modify it;
// client.PatchStatus and client.CreateOrPatch copy what they change.
//
// # The worker loop
//
// Each worker takes a key from the queue (a key is never handed to two
// workers at once; a key added while it is being reconciled is handed out
// again after) and calls Reconcile with a context that carries a klog logger
// with controller=<name> and key=<key>, and a deadline when
// Options.ReconcileTimeout is set. Then:
//
//   - nil error: Forget the key's failure history; then AddAfter when
//     Result.RequeueAfter > 0, else AddRateLimited when Result.Requeue.
//   - an error made by Terminal (IsTerminal(err)): logged once,
//     forgotten, never retried.
//   - an error matching informer.ErrNamespaceNotWatched: the key was queued
//     before its namespace left an informer's NamespaceSet. Forgotten, not
//     retried, not counted as an error, logged at V(2); if the namespace
//     comes back, its replay enqueues the key again.
//   - any other error: a retry delayed by the rate limiter while the queue's
//     NumRequeues is below the backoff count of Options.Retry (15 by default:
//     16 calls in about 164 s with the default limiter). Events meanwhile join
//     the retry; the first wakes the key Options.BackoffEventWait (5 s) after
//     the failure, and a failure of that early Reconcile is not counted. A
//     RequeueAfter returned with an error is ignored, and the log says so.
//   - an error after the last retry: the retries are exhausted, and the key
//     is never stranded: it is added back after the Every interval of
//     Options.Retry (5 minutes by default) and again after each further failure, until a
//     Reconcile succeeds (Forget: a later failure starts a new round of
//     retries) or fails terminally. Each such failure is logged with when
//     the key comes back. The limiter's count is not reset meanwhile, so an
//     event for the key reconciles it at once but a failure then waits the
//     slow interval again rather than restarting the fast retries.
//     Retry: Backoff(15, GiveUp()) forgets the key until its next event
//     instead, as kube-controller-manager's endpoint controllers do;
//     BackoffForever() backs off to the limiter's cap (1000 s by default)
//     forever, as controller-runtime and kube-controller-manager's
//     ReplicaSet controller do.
//   - a panic: recovered, counted, handled as an error (a *PanicError with
//     the stack), unless Options.RePanic is set.
//   - Done, always.
//
// Result.Priority is honoured by the default queue (ctrlkit's workqueue):
// higher-priority requeues are handed out first.
//
// Run builds the queue (keys enqueued before are kept), registers the
// watches, waits for every watched informer to have delivered its initial
// list to them, starts the workers, and when ctx ends stops taking keys, lets
// in-flight Reconciles finish, removes its event handlers and returns.
//
// # Keys and watches
//
// K is any comparable type. Key{Namespace, Name} is the usual one: its
// String form and ParseKey match client-go's cache.MetaNamespaceKeyFunc.
// Watch is the one way to connect an informer.Informer[T] to a controller:
// it maps each typed event through a func(T) []K (EnqueueObject,
// EnqueueControllerOf, or your own). Objects that are not a T (a custom
// resource that failed conversion) never reach a mapping or a queue; the
// informer reports them once, by key, and as an event on the object when it
// has a recorder (a manager.Manager's factory does).
//
// # Why did this reconcile run?
//
// A deduplicating queue forgets what queued a key. With Options.Provenance
// it does not: every add carries a Trigger (the informer, event type and
// object of a Watch event; a resync; retry #n; a Requeue or RequeueAfter;
// an Enqueue; a released write fence), and the adds of a key that wait
// together merge into one bounded Reasons record: counts per kind, plus the
// first and the last trigger in full. Reconcile reads it with
// ReasonsFrom(ctx); the worker logs it on a "Reconciling" line at -v=2
// (Provenance.LogLevel), next to the reconcileID; with
// Options.TracerProvider it is on the reconcile's OpenTelemetry span.
// Hand-written event handlers name their events with EnqueueWithTrigger and
// EventTrigger. Off (the default), the queue keeps no record and allocates
// nothing for it; docs/performance.md has the cost when on and
// docs/design/provenance.md the design.
//
// # Read your own writes: fences
//
// An informer shows a controller's own write some time after the write
// returned; a Reconcile of the same key in between reads the version the
// write replaced (and its next write conflicts, or it acts twice). With
// Options.Fences, a Reconcile records after a write what the cache must show
// before the key is reconciled again: Fence(ctx, informer, written) for "at
// written's resourceVersion or newer", FenceGone for "deleted"; with
// Fences.Auto every write through ctrlkit's clients records its fence by
// itself. A fenced key taken from the queue is held (Stats.Fenced) until
// the informer's event shows the write, a newer version or a delete (a
// relist counts), or Fences.TTL passes (logged, and counted in
// ctrlkit_controller_fence_timeouts_total). A fence never outlives its
// object: a write that removed the object (its last finalizer) waits only
// until the cache no longer has it, and no fence is recorded when the
// informer already showed the object deleted after the write.
// docs/design/fences.md has the design, docs/performance.md the cost.
//
// # A fresh enough view: Freshness
//
// Fences cover a controller's own writes; Options.Freshness covers everyone
// else's. With Freshness.Gate, a Run starts its workers only once every
// informer it watches or fences on has reached a consistent read of the API
// server taken after its caches synced (informer.Version): a new leader does
// not act on what its caches held as a standby, nor a restarted process on a
// first list served from a lagging watch cache. With Freshness.MaxLag, keys
// are held (Stats.Stale) while an informer has not reached a read older than
// the bound, and run once it caught up, with a "stale" trigger. Both are off
// by default; docs/stale-caches.md says when to turn them on.
//
// # Tracing
//
// With Options.TracerProvider every Reconcile runs in its own span
// ("Reconcile <controller>") with the controller, key, reconcile ID, the
// reasons and the outcome as attributes; a reconcile that the loop put back
// (retry, Requeue, RequeueAfter) links to the span of the one that did. The
// span is in Reconcile's context, so client-go requests made with it through
// a transport instrumented with OpenTelemetry (rest.Config.WrapTransport
// with otelhttp, or component-base's tracing) are its children.
//
// # Running under a Manager
//
// A *Controller is a manager.Runnable: Name, Run, NeedLeaderElection
// (Options.NeedLeaderElection, default true), Feature (Options.Feature) and
// HasSynced (for /readyz). A controller built without Options.Metrics
// reports into the Metrics of the context it runs with (WithMetrics), which
// is how a Manager gives it its registry.
//
// # Test kits
//
// Stats is a snapshot of the load (keys ready, Reconciles running, keys in
// retry backoff, keys held by fences, keys past their retries that come back
// at the slow interval), stable API for test kits such as
// testkit.WaitForQuiet, which wait for a settled world instead of
// sleeping. Waiting names the keys behind those counts (the held keys with
// what their fences wait for, the retrying keys), for the message of a wait
// that timed out.
//
// # Metrics of the error policy
//
// Besides controller-runtime's series (docs/metrics.md), three count what
// happens past the retries: ctrlkit_controller_retries_exhausted_total (a
// key failed after its last retry), ctrlkit_controller_slow_retries_total
// (each failure answered by a slow retry) and the gauge
// ctrlkit_controller_slow_retry_keys (keys retried slowly now, which an
// alert can watch: a key there is failing for minutes on end).
package controller
