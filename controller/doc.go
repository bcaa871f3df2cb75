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
// Use Controller alone in tests or small tools; use a Manager in a binary.
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
//	c.Watch(rsInformer, controller.EnqueueObject)
//	c.Watch(podInformer, controller.EnqueueControllerOf(appsv1.SchemeGroupVersion.WithKind("ReplicaSet")))
//
//	mgr, _ := controller.NewManager(controller.ManagerOptions{
//		Client:          client,
//		LeaderElection:  &leCfg,      // --leader-elect and friends (leaderelection.Config.AddFlags)
//		FeatureGate:     gate,        // --feature-gates (featuregate.Gate.AddFlag)
//		HealthProbeAddr: ":8081",     // /healthz, /readyz
//		MetricsAddr:     ":8080",     // /metrics
//	})
//	mgr.Add(c)
//	if err := mgr.Start(ctx); err != nil { // returns when ctx ends, or with leaderelection.ErrLeaseLost
//		klog.FromContext(ctx).Error(err, "manager failed")
//		os.Exit(1)
//	}
//
// with rsInformer and podInformer from informer.For on mgr.Factory().
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
//   - an error made by Terminal (errors.Is(err, ErrTerminal)): logged once,
//     forgotten, never retried.
//   - any other error: AddRateLimited while the queue's NumRequeues is below
//     Options.MaxRetries (15 by default: 16 calls in all), then logged and
//     forgotten until the next event. A RequeueAfter returned with an error
//     is ignored, and the log says so.
//   - a panic: recovered, counted, handled as an error (a *PanicError with
//     the stack), unless Options.RePanic is set.
//   - Done, always.
//
// Result.Priority is honoured by the default queue (ctrlkit's workqueue):
// higher-priority requeues are handed out first.
//
// Run waits for every watched informer to have delivered its initial list,
// starts the workers, and when ctx ends stops taking keys, lets in-flight
// Reconciles finish and returns.
//
// # Keys and watches
//
// K is any comparable type. Key{Namespace, Name} is the usual one: its
// String form and ParseKey match client-go's cache.MetaNamespaceKeyFunc.
// Watch connects any informer.Informer[T] through a MapFunc (EnqueueObject,
// EnqueueControllerOf, or your own); WatchTyped takes a mapping of typed
// objects instead.
//
// # The Manager
//
// Controllers that need leader election (the default, as in
// kube-controller-manager; opt out with Options.NeedLeaderElection =
// new(false)) run only while this replica leads; the rest, and every
// informer, run on all replicas, so a standby's caches and queues are warm
// when it takes over. A controller whose Options.Feature is disabled in
// ManagerOptions.FeatureGate is never started; the log says why.
//
// /healthz fails when the leader elector's watchdog does (the lease was lost
// and not released); /readyz is ok once the Manager runs and every cache has
// synced (standbys included); /metrics serves ManagerOptions.Registerer's
// metrics, a private registry by default, never Prometheus' global one. See
// Metrics for the series. EventRecorderFor gives each controller a
// record.EventRecorder with its name as the event source.
//
// Start shuts down in this order: stop the controllers (each stops intake
// and drains its in-flight Reconciles), stop the informers, end the election
// (releasing the lease with ReleaseOnCancel), stop events and HTTP. It
// returns the first fatal error (leaderelection.ErrLeaseLost, a controller's
// Run error, a cache sync timeout) instead of exiting the process.
//
// # Test kits
//
// Len (keys ready), InFlight (Reconciles running) and Idle (both zero) are
// stable API for test kits such as controllertest.WaitForQuiet, which wait
// for a settled world instead of sleeping.
package controller
