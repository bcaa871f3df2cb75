package kubelet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
)

// DefaultStartupDelay is how long a simulated Pod takes from creation to Ready.
const DefaultStartupDelay = 500 * time.Millisecond

// ErrNilClient is returned by New without a client.
var ErrNilClient = errors.New("kubelet: client must not be nil")

// Options configure a Kubelet. The zero value is valid.
type Options struct {
	// Nodes are the node names Pods are bound to, round-robin. Default node-a, node-b, node-c.
	// The nodes need not exist: binding does not check.
	Nodes []string
	// StartupDelay is how long after this Kubelet first saw a Pod bound it reports it Running
	// and Ready. (Not measured from metadata.creationTimestamp: the API server stores that in
	// whole seconds.) 0 means DefaultStartupDelay; negative means at once.
	StartupDelay time.Duration
	// Namespace limits the simulation to one namespace. "" means all.
	Namespace string
	// Clock tells the time for the delay and the status timestamps. nil means the real clock.
	Clock clock.WithTicker
}

// Kubelet binds unscheduled Pods to nodes and reports them Running and Ready after a startup
// delay. It has its own informer factory, a separate watch as a real kubelet would have, and
// is a ctrlkit controller itself. Build it with New and run it with Run.
type Kubelet struct {
	client  kubernetes.Interface
	factory *informer.Factory
	pods    informer.Informer[*corev1.Pod]
	ctrl    *controller.Controller[controller.Key]
	nodes   []string
	delay   time.Duration
	clock   clock.WithTicker
	next    atomic.Uint64 // round-robin position in nodes
	started atomic.Int64  // Pods reported Running

	mu   sync.Mutex
	seen map[controller.Key]seenPod // bound Pods starting up, and since when
}

type seenPod struct {
	uid types.UID
	at  time.Time
}

// New builds a Kubelet on client.
func New(client kubernetes.Interface, opts Options) (*Kubelet, error) {
	if client == nil {
		return nil, ErrNilClient
	}
	k := &Kubelet{client: client, nodes: opts.Nodes, delay: opts.StartupDelay, clock: opts.Clock,
		seen: map[controller.Key]seenPod{}}
	if len(k.nodes) == 0 {
		k.nodes = []string{"node-a", "node-b", "node-c"}
	}
	if k.delay == 0 {
		k.delay = DefaultStartupDelay
	}
	if k.clock == nil {
		k.clock = clock.RealClock{}
	}
	k.factory = informer.NewFactory(client, informer.Options{Namespace: opts.Namespace})
	pods, err := informer.For[*corev1.Pod](k.factory)
	if err != nil {
		return nil, fmt.Errorf("kubelet: %w", err)
	}
	k.pods = pods
	k.ctrl, err = controller.New[controller.Key]("kubelet", controller.ReconcilerFunc[controller.Key](k.reconcile),
		controller.Options[controller.Key]{Workers: 2, Clock: k.clock, NeedLeaderElection: ptr.To(false)})
	if err != nil {
		return nil, fmt.Errorf("kubelet: %w", err)
	}
	if err := controller.Watch(k.ctrl, pods, controller.EnqueueObject); err != nil {
		return nil, fmt.Errorf("kubelet: %w", err)
	}
	return k, nil
}

// Run simulates until ctx ends, then stops its controller and informers and returns. It returns
// an error only when its cache could not sync.
func (k *Kubelet) Run(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.LoggerWithName(klog.FromContext(ctx), "kubelet"))
	k.factory.Start(ctx)
	defer k.factory.Shutdown()
	return k.ctrl.Run(ctx)
}

// Name and Stats report on the Kubelet's work queue, so test kits
// (testkit.Env.RunController and WaitForQuiet) can wait until it has nothing to do.
// Pods waiting out their startup delay do not count as work.
func (k *Kubelet) Name() string { return "kubelet" }

// Stats reports the Pods queued, being handled and retrying.
func (k *Kubelet) Stats() controller.Stats { return k.ctrl.Stats() }

// Started reports how many Pods this Kubelet has reported Running.
func (k *Kubelet) Started() int { return int(k.started.Load()) }

func (k *Kubelet) reconcile(ctx context.Context, key controller.Key) (controller.Result, error) {
	pod, err := k.pods.Lister().Get(key.Namespace, key.Name)
	if apierrors.IsNotFound(err) {
		k.forget(key)
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	logger := klog.FromContext(ctx)
	if pod.DeletionTimestamp != nil {
		k.forget(key)
		if pod.Spec.NodeName == "" {
			return controller.Result{}, nil // the API server deletes unbound Pods at once
		}
		// A bound Pod stays Terminating until its kubelet says its containers stopped, by
		// deleting it with no grace period. That is this kubelet's job too.
		err := k.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return controller.Result{}, fmt.Errorf("finishing the deletion of pod %s: %w", key, err)
		}
		logger.V(2).Info("Pod terminated", "pod", klog.KObj(pod))
		return controller.Result{}, nil
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		k.forget(key)
		return controller.Result{}, nil
	}
	if pod.Spec.NodeName == "" {
		// The scheduler's job: the binding's update event brings the Pod back here.
		node := k.nodes[int(k.next.Add(1)-1)%len(k.nodes)]
		err := k.client.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: node},
		}, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return controller.Result{}, nil // gone, or already bound: a later event says which
		}
		if err != nil {
			return controller.Result{}, fmt.Errorf("binding pod %s to %s: %w", key, node, err)
		}
		logger.V(2).Info("Bound pod", "pod", klog.KObj(pod), "node", node)
		return controller.Result{}, nil
	}
	if isReady(pod) {
		k.forget(key)
		return controller.Result{}, nil
	}
	if wait := k.since(key, pod).Add(k.delay).Sub(k.clock.Now()); wait > 0 {
		return controller.Result{RequeueAfter: wait}, nil
	}
	running := pod.DeepCopy()
	now := metav1.NewTime(k.clock.Now())
	st := &running.Status
	st.Phase = corev1.PodRunning
	if st.StartTime == nil {
		st.StartTime = &now
	}
	for _, t := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		setCondition(st, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	st.ContainerStatuses = nil
	for _, c := range running.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	if _, err := k.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, running, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return controller.Result{}, nil
		}
		return controller.Result{}, fmt.Errorf("reporting pod %s running: %w", key, err)
	}
	k.forget(key)
	k.started.Add(1)
	logger.V(1).Info("Pod is running and ready", "pod", klog.KObj(pod), "node", pod.Spec.NodeName)
	return controller.Result{}, nil
}

// since returns when the Pod was first seen bound (now, the first time).
func (k *Kubelet) since(key controller.Key, pod *corev1.Pod) time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	s, ok := k.seen[key]
	if !ok || s.uid != pod.UID { // new, or re-created under the same name
		s = seenPod{uid: pod.UID, at: k.clock.Now()}
		k.seen[key] = s
	}
	return s.at
}

func (k *Kubelet) forget(key controller.Key) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.seen, key)
}

// setCondition sets c, keeping the transition time of a condition that already has c's status.
func setCondition(st *corev1.PodStatus, c corev1.PodCondition) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == c.Type {
			if st.Conditions[i].Status == c.Status {
				return
			}
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}

func isReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
