// Package controller runs Reconcilers the way kube-controller-manager runs its
// controllers: keys from informer events go into a rate-limited,
// deduplicating work queue; a fixed number of workers take keys out and call
// Reconcile; the result decides whether the key is forgotten, retried with
// backoff or requeued later. A Manager runs many controllers over one shared
// informer factory, behind leader election and feature gates, and serves
// health probes and Prometheus metrics.
//
// # When to use it
//
// Use it for any level-triggered controller: write a Reconciler that reads
// the desired and the observed state for one key and makes them agree, and
// let this package own the loop, the error policy, the queue and the
// shutdown order.
//
// # A controller in a few lines
//
//	r := controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
//		rs, err := rsLister.Get(key.Namespace, key.Name)
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
//	mgr, _ := controller.NewManager(controller.ManagerOptions{Client: client, HealthProbeAddr: ":8081", MetricsAddr: ":8080"})
//	mgr.Add(c)
//	err := mgr.Start(ctx) // returns when ctx ends, or with ErrLeaseLost
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
//     Result.RequeueAfter > 0, AddRateLimited when Result.Requeue.
//   - an error made by Terminal (matched with errors.Is(err, ErrTerminal)):
//     logged once, forgotten, never retried.
//   - any other error: AddRateLimited while the queue's NumRequeues is below
//     Options.MaxRetries (15 by default: 16 calls in all), then logged and
//     forgotten. A RequeueAfter returned with an error is ignored and the log
//     says so.
//   - a panic: recovered, counted, handled as an error (*PanicError), unless
//     Options.RePanic is set.
//   - Done, always.
//
// Run waits for the watched informers to sync, starts the workers, and on
// cancellation stops intake, lets in-flight Reconciles finish and returns.
//
// # Keys
//
// K is any comparable type. Key{Namespace, Name} is the usual one: its String
// form and ParseKey match client-go's cache.MetaNamespaceKeyFunc.
//
// # Test kits
//
// Len (keys ready), InFlight (Reconciles running) and Idle (both zero) let
// test kits such as controllertest wait for a settled world instead of
// sleeping.
package controller
