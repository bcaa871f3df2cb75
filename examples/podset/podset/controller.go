package podset

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/expectations"
	"github.com/ctrlkit/ctrlkit/finalizer"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/ownerref"
	"github.com/ctrlkit/ctrlkit/predicate"
	"github.com/ctrlkit/ctrlkit/replicas"
)

// Name is the controller's name: in logs and metrics, as the queue's name, and as the source
// of its events (give it to Manager.EventRecorderFor).
const Name = "podset"

// Defaults of Options.
const (
	// DefaultWorkers is how many PodSets are reconciled in parallel.
	DefaultWorkers = 2
	// DefaultBurstReplicas caps the Pods created or deleted in one Reconcile, as
	// kube-controller-manager's ReplicaSet controller does (its --burst-replicas is 500):
	// a PodSet scaled to 10000 converges over several passes instead of one storm.
	DefaultBurstReplicas = 500
)

// Reasons of the events the controller records on PodSets. kubectl describe shows them; the
// first four are the ReplicaSet controller's, so they read the same to users.
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonFailedCreate     = "FailedCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonFailedDelete     = "FailedDelete"
	// ReasonInvalidSpec: the selector is empty, malformed or does not match the template's
	// labels. Nothing is created until the spec is fixed.
	ReasonInvalidSpec = "InvalidSpec"
)

// ErrInvalidInput is wrapped by New's error for a missing argument.
var ErrInvalidInput = errors.New("podset: invalid input")

// Options configure New. The zero value is valid.
type Options struct {
	// Workers is how many PodSets are reconciled at once. 0 (or less) means DefaultWorkers.
	Workers int
	// BurstReplicas caps the Pods created or deleted per Reconcile. 0 (or less) means
	// DefaultBurstReplicas.
	BurstReplicas int
	// Recorder records events on PodSets; pass Manager.EventRecorderFor(podset.Name).
	// nil means no events.
	Recorder record.EventRecorder
	// Logger is for the Pod event handlers, which run outside any Reconcile. The zero
	// Logger means klog.Background(). Reconcile logs through its context's logger.
	Logger klog.Logger
	// Clock tells the time when a scale-down ranks Pods by age. nil means the real clock.
	Clock clock.PassiveClock
	// Records, when set, is the system outside the cluster where every PodSet gets a record.
	// The controller then puts FinalizerRecord on each PodSet, and on deletion removes the
	// record before it lets the PodSet go (a failing removal keeps the PodSet, is retried with
	// backoff and recorded as a FinalizeFailed event). nil means no records and no finalizer.
	Records Records
	// Namespaces, when set, limits the controller to the PodSets and Pods of these namespaces,
	// following the set as it changes (informer.InNamespaceSet; informer.NamespacesMatching
	// builds one from a label selector on Namespaces). A namespace removed is let go, not
	// cleaned up: its PodSets are not reconciled any more and their Pods stay. nil means the
	// factory's namespaces, all by default.
	Namespaces *informer.NamespaceSet
}

// Controller keeps every PodSet's Pods at spec.replicas. It is a ctrlkit controller (it embeds
// *controller.Controller, so a Manager runs it and tests can run it with testkit) and
// its Reconcile method can be called directly in tests.
type Controller struct {
	*controller.Controller[controller.Key]

	client  kubernetes.Interface
	podsets informer.Informer[*v1alpha1.PodSet]
	pods    informer.Informer[*corev1.Pod]
	// toOwner maps a Pod to its controlling PodSet in the cache (controller.EnqueueControllerOf).
	toOwner  func(*corev1.Pod) []controller.Key
	crs      *customresource.Client[*v1alpha1.PodSet]
	recorder record.EventRecorder
	logger   klog.Logger
	clock    clock.PassiveClock
	burst    int

	// exp counts the creations and deletions each PodSet is waiting to see in the Pod cache.
	// It is keyed by the PodSet's UID, not its name: a PodSet deleted and re-created under the
	// same name must not inherit the old one's pending counts (they would never be observed,
	// and would block the new one until the TTL ran out).
	exp *expectations.UIDTracking[types.UID]

	mu  sync.Mutex
	uid map[controller.Key]types.UID // the UID last reconciled under each key, to drop exp records

	records    Records                                 // nil without Options.Records
	finalizers *finalizer.Finalizers[*v1alpha1.PodSet] // FinalizerRecord's cleanup; nil without records
}

// New builds the controller on informers from f, which must have the dynamic client
// (informer.Options.DynamicClient) that dyn is: PodSets are read from f's cache and written with
// dyn, Pods are read from f's cache and written with client. Call it before f (or the Manager
// owning f) starts.
func New(f *informer.Factory, client kubernetes.Interface, dyn dynamic.Interface, opts Options) (*Controller, error) {
	if f == nil || client == nil || dyn == nil {
		return nil, fmt.Errorf("%w: New needs an informer factory, a clientset and a dynamic client", ErrInvalidInput)
	}
	var (
		psScope  []informer.ScopeOption[*v1alpha1.PodSet]
		podScope []informer.ScopeOption[*corev1.Pod]
	)
	if opts.Namespaces != nil {
		psScope = append(psScope, informer.InNamespaceSet[*v1alpha1.PodSet](opts.Namespaces))
		podScope = append(podScope, informer.InNamespaceSet[*corev1.Pod](opts.Namespaces))
	}
	podsets, err := informer.ForResource(f, v1alpha1.GVR, psScope...)
	if err != nil {
		return nil, fmt.Errorf("podset: %w", err)
	}
	pods, err := informer.For(f, podScope...)
	if err != nil {
		return nil, fmt.Errorf("podset: %w", err)
	}
	crs, err := customresource.NewClient[*v1alpha1.PodSet](dyn, v1alpha1.GVR)
	if err != nil {
		return nil, fmt.Errorf("podset: %w", err)
	}
	c := &Controller{
		client: client, podsets: podsets, pods: pods, crs: crs, toOwner: controller.EnqueueControllerOf[*corev1.Pod](podsets),
		recorder: opts.Recorder, logger: opts.Logger, clock: opts.Clock, burst: opts.BurstReplicas,
		exp: expectations.NewUIDTracking[types.UID](),
		uid: map[controller.Key]types.UID{},
	}
	if c.recorder == nil {
		c.recorder = discardRecorder{}
	}
	if c.logger.GetSink() == nil {
		c.logger = klog.Background()
	}
	c.logger = c.logger.WithValues("controller", Name)
	if opts.Records != nil {
		c.records = opts.Records
		c.finalizers = finalizer.New[*v1alpha1.PodSet](finalizer.WithEventRecorder(c.recorder))
		if err := c.finalizers.Register(FinalizerRecord, c.records.Remove); err != nil {
			return nil, fmt.Errorf("podset: %w", err)
		}
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	if c.burst <= 0 {
		c.burst = DefaultBurstReplicas
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = DefaultWorkers
	}
	c.Controller, err = controller.New[controller.Key](Name, c, controller.Options[controller.Key]{Workers: workers})
	if err != nil {
		return nil, fmt.Errorf("podset: %w", err)
	}

	// PodSets map to their own key. Objects that failed conversion never reach the queue: the
	// informer reports them (with an event on the object when it has a recorder), and a fixed
	// version of the object arrives as an add and is reconciled at once.
	if err := controller.Watch(c.Controller, podsets, controller.EnqueueObject); err != nil {
		return nil, fmt.Errorf("podset: %w", err)
	}
	// Pods map to their controlling PodSet (orphans to the PodSets that would adopt them).
	// Each event is first counted against the owner's expectations (WithObserver runs in the
	// same handler, before the mapping): with two handlers, the Reconcile could run between
	// them, see the expectation unmet, do nothing, and never be woken again.
	if err := controller.Watch(c.Controller, pods, c.podOwners,
		// The PodSets resync themselves; a Pod's resync changes nothing.
		controller.WithPredicates(predicate.ResourceVersionChanged[*corev1.Pod]()),
		controller.WithObserver(controller.ObserveChildren(c.exp, podSetUIDOf)),
	); err != nil {
		return nil, fmt.Errorf("podset: %w", err)
	}
	return c, nil
}

// Reconcile makes one PodSet's Pods match its spec and reports what it saw in its status. It is
// kube-controller-manager's syncReplicaSet for a custom resource:
//
//  1. read the PodSet from the cache (gone: forget it; its Pods are the garbage collector's);
//     with Options.Records, keep its record outside the cluster, and on deletion remove the
//     record and then the finalizer (package finalizer);
//  2. check its selector (an invalid one is reported and not retried);
//  3. note whether the Pod cache has caught up with our last writes (expectations);
//  4. list the namespace's active Pods and claim those the selector matches (adopting
//     orphans, releasing Pods that stopped matching);
//  5. if the cache is current and the PodSet is not being deleted, create or delete Pods;
//  6. write status (replicas, readyReplicas, conditions) through /status if it changed.
func (c *Controller) Reconcile(ctx context.Context, key controller.Key) (controller.Result, error) {
	logger := klog.FromContext(ctx)
	ps, err := c.podsets.Lister().Get(key.Namespace, key.Name)
	switch {
	case apierrors.IsNotFound(err):
		// Deleted. No finalizer is needed: every Pod carries a controller reference to the
		// PodSet, so the garbage collector deletes them (in the background, or first when the
		// PodSet was deleted with propagationPolicy Foreground). Only bookkeeping is left.
		c.forget(key)
		logger.V(2).Info("PodSet is gone; its Pods are left to the garbage collector")
		return controller.Result{}, nil
	case errors.Is(err, informer.ErrUnexpectedType):
		// The cached version did not decode (a Pod event brought the key here): the informer
		// reported it, with an event on the object; only a new version can fix it.
		return controller.Result{}, controller.Terminal(err)
	case err != nil:
		// Also a namespace that left Options.Namespaces (informer.ErrNamespaceNotWatched):
		// the controller forgets the key, and Pods there are left alone.
		return controller.Result{}, err
	}
	c.remember(key, ps.UID)

	if c.finalizers != nil {
		// Outside the cluster first: on deletion the record goes, then the finalizer, then
		// (the API server's doing) the PodSet; its Pods are the garbage collector's.
		updated, res, err := c.finalizers.Finalize(ctx, finalizer.InNamespace(c.crs, ps.Namespace), ps)
		if err != nil || res.Deleting {
			return controller.Result{}, err
		}
		ps = updated
		if err := c.records.Put(ctx, ps); err != nil {
			return controller.Result{}, err
		}
	}

	selector, err := podSelector(ps)
	if err != nil {
		c.recorder.Event(ps, corev1.EventTypeWarning, ReasonInvalidSpec, err.Error())
		st := ps.Status.DeepCopy()
		setFailure(st, ps.Generation, ReasonInvalidSpec, err)
		return controller.Result{}, errors.Join(controller.Terminal(err), c.writeStatus(ctx, ps, *st))
	}

	// Read the expectations before listing: if the last events arrive between the two, the
	// list is newer than the answer, which errs on the side of waiting.
	cacheCurrent := c.exp.Satisfied(ps.UID)
	all, err := c.pods.Lister().Namespace(ps.Namespace).List(labels.Everything())
	if err != nil {
		return controller.Result{}, err
	}
	canAdopt := ownerref.RecheckOwner(ps, ownerref.GetFresh(func(ctx context.Context, name string, opts metav1.GetOptions) (*v1alpha1.PodSet, error) {
		return c.crs.Get(ctx, ps.Namespace, name, opts)
	}, ps.Name))
	claimer := ownerref.NewClaimerWithOptions[*corev1.Pod](ps, v1alpha1.GVK, selector, canAdopt,
		ownerref.PodsPatcher(c.client), ownerref.ClaimerOptions{PatchType: ClaimPatchType})
	pods, err := claimer.ClaimObjects(ctx, replicas.FilterActivePods(all))
	if onlyConflicts(err) {
		// A claimed Pod changed since the cache's copy (the merge patch carries its
		// resourceVersion). Not a failure: look again once the cache has the new version.
		// Creating or deleting now would count without that Pod, so nothing else happens.
		logger.V(2).Info("A claimed Pod changed meanwhile; trying again", "err", err)
		return controller.Result{Requeue: true}, nil
	}
	if err != nil {
		return controller.Result{}, fmt.Errorf("claiming pods of %s: %w", key, err)
	}

	var manageErr error
	switch {
	case !cacheCurrent:
		add, del, _ := c.exp.Get(ps.UID)
		logger.V(2).Info("Waiting for the Pod cache to catch up", "pendingCreates", add, "pendingDeletes", del)
	case ps.DeletionTimestamp != nil:
		// Being deleted (foreground deletion waits for our Pods): create nothing new.
	default:
		manageErr = c.manageReplicas(ctx, ps, pods)
	}

	st := calculateStatus(ps, pods, manageErr)
	return controller.Result{}, errors.Join(manageErr, c.writeStatus(ctx, ps, st))
}

// ClaimPatchType is how claims patch Pods' ownerReferences: a JSON merge patch carrying the
// Pod's resourceVersion. Pods would also take a strategic merge patch (what
// kube-controller-manager sends for its built-in owners), but a merge patch works for every
// kind of child — custom resources refuse strategic merge — so the same code serves a user
// whose PodSet-like controller owns custom resources; and a stale cached Pod gets a Conflict
// (retried with the next sync) instead of a patch computed from old data.
const ClaimPatchType = types.MergePatchType

// onlyConflicts reports whether err, an aggregate from ClaimObjects, holds Conflict answers
// and nothing else.
func onlyConflicts(err error) bool {
	var agg utilerrors.Aggregate
	if !errors.As(err, &agg) || len(agg.Errors()) == 0 {
		return false
	}
	for _, e := range agg.Errors() {
		if !apierrors.IsConflict(e) {
			return false
		}
	}
	return true
}

// podSelector returns the PodSet's selector, refusing one that would make the controller
// misbehave: empty (it would claim every Pod of the namespace) or not matching the template
// (every Pod created would fail to count, and the controller would create forever). The API
// server validates both for ReplicaSets; a CRD schema cannot express the second.
func podSelector(ps *v1alpha1.PodSet) (labels.Selector, error) {
	sel := ps.Spec.Selector
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return nil, errors.New("spec.selector must not be empty: it would select every Pod in the namespace")
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Errorf("spec.selector: %w", err)
	}
	if !selector.Matches(labels.Set(ps.Spec.Template.Labels)) {
		return nil, fmt.Errorf("spec.selector %q does not match spec.template.metadata.labels %v", selector, ps.Spec.Template.Labels)
	}
	return selector, nil
}

// remember records the UID reconciled under key; if the key held another PodSet before (deleted
// and re-created under the same name), the old one's expectations are dropped. Reconciles of one
// key never overlap, so the map only needs a lock for different keys.
func (c *Controller) remember(key controller.Key, uid types.UID) {
	c.mu.Lock()
	prev, ok := c.uid[key]
	c.uid[key] = uid
	c.mu.Unlock()
	if ok && prev != uid {
		c.exp.DeleteExpectations(prev)
	}
}

// forget drops the bookkeeping of a deleted PodSet.
func (c *Controller) forget(key controller.Key) {
	c.mu.Lock()
	uid, ok := c.uid[key]
	delete(c.uid, key)
	c.mu.Unlock()
	if ok {
		c.exp.DeleteExpectations(uid)
	}
}

// discardRecorder is the recorder of a controller built without one.
type discardRecorder struct{}

func (discardRecorder) Event(runtime.Object, string, string, string)          {}
func (discardRecorder) Eventf(runtime.Object, string, string, string, ...any) {}
func (discardRecorder) AnnotatedEventf(runtime.Object, map[string]string, string, string, string, ...any) {
}
