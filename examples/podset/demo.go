package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/examples/podset/podset"
	"github.com/ctrlkit/ctrlkit/informer"
)

// demoNamespace is where the in-memory cluster's objects live.
const demoNamespace = metav1.NamespaceDefault

// webPodSet is the PodSet the demo scales: Pods labelled app=web running nginx.
func webPodSet(replicas int32) *v1alpha1.PodSet {
	lbls := map[string]string{"app": "web"}
	return &v1alpha1.PodSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: demoNamespace, Name: "web"},
		Spec: v1alpha1.PodSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: lbls},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbls},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}
}

// seed is the in-memory cluster's starting state: the PodSet web (3 replicas), an orphan Pod
// its selector matches (to be adopted), and a PodSet whose spec.replicas is a string, which the
// controller cannot decode (to be reported while everything else goes on).
func seed() (podsets []*unstructured.Unstructured, pods []runtime.Object, err error) {
	web, err := runtime.DefaultUnstructuredConverter.ToUnstructured(webPodSet(3))
	if err != nil {
		return nil, nil, err
	}
	broken := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": v1alpha1.Kind,
		"metadata": map[string]any{"namespace": demoNamespace, "name": "broken"},
		"spec": map[string]any{
			"replicas": "three",
			"selector": map[string]any{"matchLabels": map[string]any{"app": "broken"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "broken"}}},
		},
	}}
	orphan := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: demoNamespace, Name: "web-orphan", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
	}
	return []*unstructured.Unstructured{{Object: web}, broken}, []runtime.Object{orphan}, nil
}

// idler is what the demo needs of the controller: whether it has nothing to do.
type idler interface{ Stats() controller.Stats }

// runDemo walks through what the controller does, waiting for each step to converge.
func runDemo(ctx context.Context, env *demo.Env, c idler, records *podset.MemoryRecords) error {
	logger := klog.FromContext(ctx).WithName("demo")
	cs := clients{typed: env.Client, dynamic: env.Dynamic}
	crs, err := customresource.NewClient[*v1alpha1.PodSet](cs.dynamic, v1alpha1.GVR)
	if err != nil {
		return err
	}
	podsets := crs
	pods := cs.typed.CoreV1().Pods(demoNamespace)
	step := func(what string, cond func(context.Context) (bool, error)) error { return env.Step(ctx, what, cond) }
	// owned lists the active Pods web controls.
	owned := func(ctx context.Context) ([]corev1.Pod, error) {
		list, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		var out []corev1.Pod
		for _, p := range list.Items {
			if ref := metav1.GetControllerOf(&p); ref != nil && ref.Kind == v1alpha1.Kind && ref.Name == "web" && p.DeletionTimestamp == nil {
				out = append(out, p)
			}
		}
		return out, nil
	}
	// converged: web has n Pods, all ready, and its status says so for its current generation.
	converged := func(n int32) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			ps, err := podsets.Get(ctx, demoNamespace, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			ps2, err := owned(ctx)
			if err != nil {
				return false, err
			}
			st := ps.Status
			return int32(len(ps2)) == n && st.Replicas == n && st.ReadyReplicas == n &&
				st.ObservedGeneration == ps.Generation &&
				meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionAvailable), nil
		}
	}
	scale := func(n int32) error {
		logger.Info("Scaling web", "replicas", n)
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			ps, err := podsets.Get(ctx, demoNamespace, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			ps.Spec.Replicas = ptr.To(n)
			_, err = podsets.Update(ctx, ps, metav1.UpdateOptions{})
			return err
		})
	}
	// settled waits until the controller has had nothing to do for a while (five idle polls in
	// a row), so that "nothing happened" is an observation rather than a hope.
	settled := func(what string) error {
		idle := 0
		return demo.Await(ctx, env.Timeout, what, func(context.Context) (bool, error) {
			if c.Stats().Idle() {
				idle++
			} else {
				idle = 0
			}
			return idle >= 5, nil
		})
	}

	if err := step("web has 3 ready Pods, the orphan web-orphan adopted, status Available", func(ctx context.Context) (bool, error) {
		ok, err := converged(3)(ctx)
		if !ok || err != nil {
			return ok, err
		}
		orphan, err := pods.Get(ctx, "web-orphan", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ref := metav1.GetControllerOf(orphan)
		return ref != nil && ref.Name == "web", nil
	}); err != nil {
		return err
	}
	if err := step(`broken (spec.replicas: "three") is reported with an Undecodable event`, func(ctx context.Context) (bool, error) {
		reasons, err := eventReasons(ctx, cs, "broken")
		return reasons[informer.ReasonUndecodable] > 0, err
	}); err != nil {
		return err
	}

	if err := scale(5); err != nil {
		return err
	}
	if err := step("web has 5 ready Pods, observedGeneration 2", converged(5)); err != nil {
		return err
	}
	if err := scale(2); err != nil {
		return err
	}
	if err := step("web is down to 2 ready Pods", converged(2)); err != nil {
		return err
	}

	left, err := owned(ctx)
	if err != nil {
		return err
	}
	victim := left[0].Name
	logger.Info("Deleting a Pod behind the controller's back", "pod", victim)
	if err := pods.Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
		return err
	}
	if err := step("web replaced "+victim, func(ctx context.Context) (bool, error) {
		ok, err := converged(2)(ctx)
		if !ok || err != nil {
			return ok, err
		}
		_, err = pods.Get(ctx, victim, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		return err
	}

	// Deleting the PodSet. Its finalizer holds the deletion back until the controller removed
	// web's record outside the cluster (the demo's in-memory "external system"); then the
	// PodSet goes. On a cluster the garbage collector then deletes its Pods, which carry its
	// controller reference. The in-memory cluster has no garbage collector, so the Pods stay —
	// and the controller, whose job ended with the PodSet, leaves them alone: deleting one more
	// is not undone.
	web, err := podsets.Get(ctx, demoNamespace, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	logger.Info("Deleting PodSet web: its finalizer first removes its external record", "records", records.Len())
	if err := podsets.Delete(ctx, demoNamespace, "web", metav1.DeleteOptions{}); err != nil {
		return err
	}
	if err := step("web's external record is removed, then web is gone", func(ctx context.Context) (bool, error) {
		_, err := podsets.Get(ctx, demoNamespace, "web", metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
		return apierrors.IsNotFound(err) && !records.Has(web.UID), nil
	}); err != nil {
		return err
	}
	logger.Info("Record cleanup ran", "times", records.Removals(web.UID))
	if err := settled("the controller saw web go"); err != nil {
		return err
	}
	left, err = owned(ctx)
	if err != nil {
		return err
	}
	names := make([]string, len(left))
	for i, p := range left {
		names[i] = p.Name
	}
	logger.Info("Pods of web left for a garbage collector (none runs in memory)", "pods", names)
	if len(left) > 0 {
		if err := pods.Delete(ctx, left[0].Name, metav1.DeleteOptions{}); err != nil {
			return err
		}
		if err := settled("the controller ignored the deleted Pod"); err != nil {
			return err
		}
		now, err := owned(ctx)
		if err != nil {
			return err
		}
		if len(now) != len(left)-1 {
			return fmt.Errorf("after web was deleted its Pods went from %d to %d: the controller still manages them", len(left), len(now))
		}
		logger.Info("Nothing replaced it: the controller stopped working on web", "pod", left[0].Name)
	}

	reasons, err := eventReasons(ctx, cs, "web")
	if err != nil {
		return err
	}
	var summary []string
	for _, r := range slices.Sorted(maps.Keys(reasons)) {
		summary = append(summary, fmt.Sprintf("%s=%d", r, reasons[r]))
	}
	logger.Info("Events recorded on PodSet web", "events", strings.Join(summary, " "))
	logger.Info("Demo converged")
	return nil
}

// eventReasons counts the events recorded on the PodSet called name, by reason.
func eventReasons(ctx context.Context, cs clients, name string) (map[string]int32, error) {
	list, err := cs.typed.CoreV1().Events(demoNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	reasons := map[string]int32{}
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == v1alpha1.Kind && e.InvolvedObject.Name == name {
			reasons[e.Reason] += max(e.Count, 1)
		}
	}
	return reasons, nil
}
