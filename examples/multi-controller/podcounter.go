package main

import (
	"context"
	"encoding/json"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/featuregate"
	"github.com/ctrlkit/ctrlkit/informer"
)

const (
	// PodCounter gates the pod-counter controller. Alpha, off by default: it writes to every
	// Namespace, which operators should opt into.
	PodCounter featuregate.Feature = "PodCounter"
	// AnnotationPodCount on a Namespace is the number of its Pods that have not finished.
	AnnotationPodCount = "ctrlkit.dev/pod-count"
	// PodCounterName is the controller's name.
	PodCounterName = "pod-counter"
)

// features are this binary's feature gates.
var features = map[featuregate.Feature]featuregate.FeatureSpec{
	PodCounter: {Default: false, PreRelease: featuregate.Alpha},
}

// podCounter keeps AnnotationPodCount of every Namespace equal to its number of active Pods.
// Its key is the Namespace (a cluster-scoped Key: Name only).
type podCounter struct {
	*controller.Controller[controller.Key] // the worker loop, as in every example

	client     kubernetes.Interface
	namespaces informer.Informer[*corev1.Namespace]
	pods       informer.Informer[*corev1.Pod]
}

// newPodCounter builds the pod-counter on informers of f. The Namespace informer is the same
// one the propagator watches: one watch, two controllers.
func newPodCounter(f *informer.Factory, client kubernetes.Interface, workers int) (*podCounter, error) {
	pc := &podCounter{client: client}
	var err error
	if pc.namespaces, err = informer.For[*corev1.Namespace](f); err != nil {
		return nil, err
	}
	if pc.pods, err = informer.For[*corev1.Pod](f); err != nil {
		return nil, err
	}
	pc.Controller, err = controller.New(PodCounterName, pc, controller.Options[controller.Key]{
		Workers: workers,
		Feature: PodCounter, // the Manager starts it only while the gate is on
	})
	if err != nil {
		return nil, err
	}
	if err := controller.Watch(pc.Controller, pc.namespaces, controller.EnqueueObject); err != nil {
		return nil, err
	}
	// A Pod's event concerns its Namespace's count.
	if err := controller.Watch(pc.Controller, pc.pods, func(pod *corev1.Pod) []controller.Key {
		return []controller.Key{{Name: pod.GetNamespace()}}
	}); err != nil {
		return nil, err
	}
	return pc, nil
}

func (pc *podCounter) Reconcile(ctx context.Context, key controller.Key) (controller.Result, error) {
	ns, err := pc.namespaces.Lister().Get("", key.Name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	pods, err := pc.pods.Lister().Namespace(key.Name).List(labels.Everything())
	if err != nil {
		return controller.Result{}, err
	}
	n := 0
	for _, p := range pods {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			n++
		}
	}
	count := strconv.Itoa(n)
	if ns.Annotations[AnnotationPodCount] == count {
		return controller.Result{}, nil
	}
	// A merge patch of the one annotation: no read-modify-write of the whole Namespace, so no
	// Conflict with other writers (the propagator's users label Namespaces).
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnotationPodCount: count}}})
	if err != nil {
		return controller.Result{}, err
	}
	if _, err := pc.client.CoreV1().Namespaces().Patch(ctx, key.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return controller.Result{}, nil
		}
		return controller.Result{}, err
	}
	klog.FromContext(ctx).Info("Counted pods", "namespace", key.Name, "pods", n)
	return controller.Result{}, nil
}
