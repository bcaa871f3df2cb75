package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	kworkqueue "k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/expectations"
	"github.com/ctrlkit/ctrlkit/featuregate"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/ownerref"
	"github.com/ctrlkit/ctrlkit/predicate"
	"github.com/ctrlkit/ctrlkit/provenance"
	"github.com/ctrlkit/ctrlkit/replicas"
)

// ControllerName names the controller in logs, metrics and the queue.
const ControllerName = "replicaset"

// DefaultBurstReplicas caps the Pods created or deleted in one sync, as kube-controller-manager
// does: a ReplicaSet scaled from 0 to 10,000 gets there over several syncs, each waiting for
// the previous one's Pods to show up in the cache, instead of flooding the API server.
const DefaultBurstReplicas = 500

// rsKind is the kind owner references name; typed objects from a clientset carry no TypeMeta.
var rsKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// Options configure the ReplicaSet controller. The zero value is valid.
type Options struct {
	// Workers sync ReplicaSets in parallel (never one ReplicaSet twice at once). Default 5,
	// kube-controller-manager's --concurrent-replicaset-syncs.
	Workers int
	// BurstReplicas caps the creates or deletes of one sync. Default DefaultBurstReplicas.
	BurstReplicas int
	// FeatureGate is read for ReplicaSetSlowStartBatching. nil means every feature at its
	// default (see AddFeatures).
	FeatureGate featuregate.Gates
	// Clock tells the time for availability (minReadySeconds) and for ranking Pods to delete
	// by age, and drives the queue's delays. nil means the real clock.
	Clock clock.WithTicker
	// RateLimiter paces retries of failed syncs. nil means client-go's controller default
	// (5 ms doubling to 1000 s per ReplicaSet, 10 qps overall). Tests shorten it.
	RateLimiter kworkqueue.TypedRateLimiter[controller.Key]
	// Retry is what happens to a ReplicaSet whose sync failed (controller.Options.Retry).
	// The zero value is the controller package's default: 15 retries through RateLimiter,
	// then one every 5 minutes until a sync succeeds. Tests shorten both.
	Retry controller.Retry
	// Recorder records events on ReplicaSets (SuccessfulCreate, FailedCreate,
	// SuccessfulDelete, FailedDelete, as kube-controller-manager does); pass
	// Manager.EventRecorderFor(ControllerName). nil means no events.
	Recorder record.EventRecorder
	// Logger is for the informer event handlers, which have no context. Default
	// klog.Background(). Reconcile logs through its context's logger.
	Logger klog.Logger
	// Freshness holds syncs while the caches are behind the API server
	// (controller.Options.Freshness). kube-controller-manager has no such guard, and the zero
	// value keeps its behaviour, as the binary does: its demo races a simulated kubelet that
	// binds Pods at once. The simulator's tests show what the gate and MaxLag are for
	// (TestSimReplicaSetActsOnAStaleCache against TestSimReplicaSetWithTheGateWaitsOutAStaleCache).
	Freshness controller.Freshness
}

// ReplicaSetController keeps the number of Pods of every ReplicaSet at spec.replicas, the way
// kube-controller-manager's ReplicaSet controller does.
//
// The pieces and why each is there:
//
//   - One informer factory serves both ReplicaSets and Pods, so every controller of the
//     process shares one watch per type.
//   - Pod events are mapped to the ReplicaSet that controls the Pod (its controller owner
//     reference, resolved by UID), and an orphan's events to every ReplicaSet whose selector
//     matches it (one of them may adopt it).
//   - Expectations (UID-tracking) record the creates and deletes a sync asked for; the next
//     sync acts only once the informer has shown all of them, so a cache that lags behind the
//     controller's own writes never causes a duplicate create or delete. The Pod handler
//     observes an expectation and enqueues the owner in the same call: done in two handlers,
//     the enqueue could overtake the observation, and the sync it triggers would find the
//     expectation still pending and go back to sleep with no event left to wake it.
//   - ownerref.Claimer adopts matching orphans and releases Pods that stopped matching,
//     re-reading the ReplicaSet uncached before its first adoption (RecheckOwner).
//   - Creates go in slow-start batches (replicas.SlowStartBatch, behind
//     ReplicaSetSlowStartBatching), deletes all at once (replicas.InParallel) of the Pods
//     replicas.PodsToDelete ranks first; requests that failed or were never sent are
//     subtracted from the expectations, since their events will never come.
//   - Status is computed from the claimed Pods and written with UpdateStatus only when it
//     changed.
//   - Provenance is on: the handlers name each event (EnqueueWithTrigger), so every sync
//     knows why it runs (controller.ReasonsFrom) and logs it at -v=2.
//   - Status writes are fenced (controller.Fence): the next sync of a ReplicaSet waits until
//     the informer shows its last status write, so it never works from the status it just
//     replaced (and never conflicts with its own write).
//   - Every create and delete is reported as an event on the ReplicaSet (Options.Recorder),
//     with kube-controller-manager's reasons and messages, so kubectl describe shows why a
//     ReplicaSet is short of Pods.
type ReplicaSetController struct {
	// The worker loop: a Manager runs a ReplicaSetController as it is, and tests run it with
	// testkit or call Reconcile directly.
	*controller.Controller[controller.Key]

	client   kubernetes.Interface
	rss      informer.Informer[*appsv1.ReplicaSet]
	pods     informer.Informer[*corev1.Pod]
	exp      *expectations.UIDTracking[controller.Key]
	gate     featuregate.Gates
	burst    int
	clock    clock.WithTicker
	logger   klog.Logger
	recorder record.EventRecorder
}

// NewReplicaSetController builds the controller on informers of f and writes through client.
// Add it to a Manager, or Run it.
func NewReplicaSetController(f *informer.Factory, client kubernetes.Interface, opts Options) (*ReplicaSetController, error) {
	if opts.Workers == 0 {
		opts.Workers = 5
	}
	if opts.BurstReplicas <= 0 {
		opts.BurstReplicas = DefaultBurstReplicas
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = klog.Background()
	}
	if opts.Recorder == nil {
		opts.Recorder = discardRecorder{}
	}
	c := &ReplicaSetController{
		client:   client,
		exp:      expectations.NewUIDTracking[controller.Key](expectations.WithClock(opts.Clock), expectations.WithLogger(opts.Logger)),
		gate:     opts.FeatureGate,
		burst:    opts.BurstReplicas,
		clock:    opts.Clock,
		logger:   opts.Logger.WithValues("controller", ControllerName),
		recorder: opts.Recorder,
	}
	var err error
	if c.rss, err = informer.For[*appsv1.ReplicaSet](f); err != nil {
		return nil, err
	}
	if c.pods, err = informer.For[*corev1.Pod](f); err != nil {
		return nil, err
	}
	c.Controller, err = controller.New(ControllerName, c, controller.Options[controller.Key]{
		Workers: opts.Workers, RateLimiter: opts.RateLimiter, Clock: opts.Clock,
		Retry: opts.Retry,
		// Every sync says why it runs (which ReplicaSet or Pod event, retry, requeue) on a
		// "Reconciling" line at -v=2, and in ReasonsFrom(ctx).
		Provenance: &controller.Provenance{},
		// Status writes are fenced (updateStatus): a sync never reads the ReplicaSet its own
		// previous status write replaced.
		Fences:    &controller.Fences{},
		Freshness: opts.Freshness,
	})
	if err != nil {
		return nil, err
	}
	// Both watches go through controller.Watch. Each event is first observed (expectations,
	// in the same handler) and then mapped to the ReplicaSets to sync. Watching the
	// ReplicaSets also names their informer for the status writes' fences.
	if err := controller.Watch(c.Controller, c.rss, controller.EnqueueObject,
		controller.WithObserver[*appsv1.ReplicaSet](informer.HandlerFuncs[*appsv1.ReplicaSet]{
			OnUpdate: c.updateReplicaSet,
			OnDelete: func(rs *appsv1.ReplicaSet) {
				c.exp.DeleteExpectations(controller.KeyFromObject(rs)) // a re-created ReplicaSet starts afresh
			},
		})); err != nil {
		return nil, err
	}
	if err := controller.Watch(c.Controller, c.pods, c.podOwners,
		// A ReplicaSet resyncs itself; a Pod's resync changes nothing.
		controller.WithPredicates(predicate.ResourceVersionChanged[*corev1.Pod]()),
		controller.WithObserver(controller.ObserveChildren(c.exp, c.ownerKey)),
		controller.WithObserver[*corev1.Pod](informer.HandlerFuncs[*corev1.Pod]{OnUpdate: c.podBecameReady}),
	); err != nil {
		return nil, err
	}
	return c, nil
}

// Expectations exposes the pending creates and deletes, for tests and debugging.
func (c *ReplicaSetController) Expectations() *expectations.UIDTracking[controller.Key] {
	return c.exp
}

func (c *ReplicaSetController) updateReplicaSet(old, cur *appsv1.ReplicaSet) {
	if old.UID != cur.UID {
		// Deleted and re-created while the watch was down: forget the old one's expectations.
		c.exp.DeleteExpectations(controller.KeyFromObject(old))
	}
	if from, to := ptrOr(old.Spec.Replicas, 1), ptrOr(cur.Spec.Replicas, 1); from != to {
		c.logger.V(4).Info("ReplicaSet scaled", "replicaSet", klog.KObj(cur), "from", from, "to", to)
	}
}

// resolveControllerRef returns the ReplicaSet a controller reference points at, or nil when
// it is not a ReplicaSet, not in the cache, or a different ReplicaSet of the same name (UIDs
// differ): events of such Pods concern no ReplicaSet we know.
func (c *ReplicaSetController) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1.ReplicaSet {
	if ref == nil || ref.Kind != rsKind.Kind || !sameGroup(ref.APIVersion) {
		return nil
	}
	rs, err := c.rss.Lister().Get(namespace, ref.Name)
	if err != nil || rs.UID != ref.UID {
		return nil
	}
	return rs
}

func sameGroup(apiVersion string) bool {
	gv, err := schema.ParseGroupVersion(apiVersion)
	return err == nil && gv.Group == rsKind.Group
}

// matchingReplicaSets returns the ReplicaSets of pod's namespace whose selector matches it:
// the candidates to adopt an orphan.
func (c *ReplicaSetController) matchingReplicaSets(pod *corev1.Pod) []*appsv1.ReplicaSet {
	rss, err := c.rss.Lister().Namespace(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, rs)
	}
	if len(out) > 1 {
		// Allowed, but a sign of overlapping selectors: the first to sync adopts the Pod.
		c.logger.V(4).Info("Orphan pod matches several ReplicaSets", "pod", klog.KObj(pod), "count", len(out))
	}
	return out
}

// ownerKey is the expectations key of the ReplicaSet controlling pod (ObserveChildren).
func (c *ReplicaSetController) ownerKey(pod *corev1.Pod) (controller.Key, bool) {
	rs := c.resolveControllerRef(pod.Namespace, metav1.GetControllerOfNoCopy(pod))
	if rs == nil {
		return controller.Key{}, false // an orphan's events change no ReplicaSet's expectations
	}
	return controller.KeyFromObject(rs), true
}

// podOwners maps a Pod to the ReplicaSets to sync: its controller, or, for an orphan, every
// ReplicaSet whose selector matches it (the candidates to adopt it). An update reaches the
// owners of both the old and the new Pod, so a ReplicaSet that lost a Pod hears of it.
func (c *ReplicaSetController) podOwners(pod *corev1.Pod) []controller.Key {
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		if rs := c.resolveControllerRef(pod.Namespace, ref); rs != nil {
			return []controller.Key{controller.KeyFromObject(rs)}
		}
		return nil
	}
	rss := c.matchingReplicaSets(pod)
	keys := make([]controller.Key, len(rss))
	for i, rs := range rss {
		keys[i] = controller.KeyFromObject(rs)
	}
	return keys
}

// podBecameReady syncs the owner again MinReadySeconds after its Pod became ready: no event
// marks the moment the Pod becomes available.
func (c *ReplicaSetController) podBecameReady(old, cur *corev1.Pod) {
	if cur.DeletionTimestamp != nil || podReady(old) || !podReady(cur) {
		return
	}
	rs := c.resolveControllerRef(cur.Namespace, metav1.GetControllerOfNoCopy(cur))
	if rs == nil || rs.Spec.MinReadySeconds <= 0 {
		return
	}
	t := provenance.EventTrigger(c.pods.Name(), provenance.EventUpdate, cur)
	t.After = time.Duration(rs.Spec.MinReadySeconds) * time.Second
	c.Controller.EnqueueWithTrigger(controller.KeyFromObject(rs), t)
}

// Reconcile syncs one ReplicaSet: claim its Pods, create or delete the difference to
// spec.replicas (only when the cache has caught up with the previous sync's writes), and
// write its status.
func (c *ReplicaSetController) Reconcile(ctx context.Context, key controller.Key) (controller.Result, error) {
	logger := klog.FromContext(ctx)
	rs, err := c.rss.Lister().Get(key.Namespace, key.Name)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info("ReplicaSet is gone")
		c.exp.DeleteExpectations(key)
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		return controller.Result{}, controller.Terminal(fmt.Errorf("replicaset %s: invalid selector: %w", key, err))
	}
	if selector.Empty() {
		// The API server refuses this; a fake or an old object might not. Adopting every Pod
		// of the namespace is never what anyone meant.
		return controller.Result{}, controller.Terminal(fmt.Errorf("replicaset %s: empty selector would select every pod", key))
	}

	// Read before listing: an observation that lands between the list and this read would
	// otherwise make a stale list look current.
	needsSync := c.exp.Satisfied(key) && rs.DeletionTimestamp == nil

	all, err := c.pods.Lister().Namespace(rs.Namespace).List(labels.Everything())
	if err != nil {
		return controller.Result{}, err
	}
	pods, err := c.claimPods(ctx, rs, selector, replicas.FilterActivePods(all))
	if err != nil {
		return controller.Result{}, err // retried; the claims that succeeded are kept
	}

	var manageErr error
	if needsSync {
		manageErr = c.manageReplicas(ctx, key, rs, pods)
	}
	status := calculateStatus(rs, pods, manageErr, c.clock.Now())
	updated, err := c.updateStatus(ctx, rs, status)
	if err != nil {
		return controller.Result{}, errors.Join(manageErr, err)
	}
	if manageErr != nil {
		return controller.Result{}, manageErr
	}
	if d := nextAvailable(updated, pods, c.clock.Now()); d > 0 {
		return controller.Result{RequeueAfter: d}, nil
	}
	return controller.Result{}, nil
}

// claimPods returns the Pods rs owns after adopting matching orphans and releasing owned Pods
// that stopped matching.
func (c *ReplicaSetController) claimPods(ctx context.Context, rs *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	// The cache may not show yet that rs is being deleted (or was replaced); adopting then
	// would hand Pods to an owner about to take them down. So the first adoption of this sync
	// re-reads rs from the API server.
	canAdopt := ownerref.RecheckOwner(rs, ownerref.GetFresh(c.client.AppsV1().ReplicaSets(rs.Namespace).Get, rs.Name))
	claimer := ownerref.NewClaimer[*corev1.Pod](rs, rsKind, selector, canAdopt, ownerref.PodsPatcher(c.client))
	claimed, err := claimer.ClaimObjects(ctx, pods)
	if err == nil {
		logClaims(klog.FromContext(ctx), rs, pods, claimed)
	}
	return claimed, err
}

// logClaims logs the Pods a claim adopted or released.
func logClaims(logger klog.Logger, rs *appsv1.ReplicaSet, before, claimed []*corev1.Pod) {
	ours := make(map[types.UID]bool, len(claimed))
	for _, p := range claimed {
		ours[p.UID] = true
	}
	for _, p := range before {
		switch was := ownerref.IsControlledBy(p, rs); {
		case !was && ours[p.UID]:
			logger.Info("Adopted pod", "pod", klog.KObj(p))
		case was && !ours[p.UID]:
			logger.Info("Released pod", "pod", klog.KObj(p))
		}
	}
}

func ptrOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
