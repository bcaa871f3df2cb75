package main

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
)

const (
	demoNamespace = "demo"
	// podStartupDelay is how long the simulated kubelet takes to start a Pod.
	podStartupDelay = 300 * time.Millisecond
)

// replicaSet is a ReplicaSet of nginx Pods labelled app=<name>.
func replicaSet(namespace, name string, uid types.UID, replicas int32) *appsv1.ReplicaSet {
	lbls := map[string]string{"app": name}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: uid},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: lbls},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name, "tier": "frontend"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}},
					TerminationGracePeriodSeconds: ptr.To[int64](5)},
			},
		},
	}
}

// seed is the in-memory cluster's starting state, chosen so the first sync shows every path:
//
//   - web (3 replicas) has an orphan Pod that matches it (adopted: only 2 are created) and a
//     Pod it controls whose labels no longer match (released);
//   - api (1 replica) controls 3 Pods: one unscheduled, one running but not ready, one ready;
//     scaling down deletes the first two and keeps the ready one.
func seed() []runtime.Object {
	web := replicaSet(demoNamespace, "web", "00000000-0000-0000-0000-00000000e1b0", 3)
	api := replicaSet(demoNamespace, "api", "00000000-0000-0000-0000-0000000000a1", 1)
	pod := func(name string, lbls map[string]string, owner *appsv1.ReplicaSet, node string, phase corev1.PodPhase, ready bool) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: demoNamespace, Name: name, Labels: lbls},
			Spec:       *web.Spec.Template.Spec.DeepCopy(),
			Status:     corev1.PodStatus{Phase: phase},
		}
		p.Spec.NodeName = node
		if owner != nil {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner.Name,
				UID: owner.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
		}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}}
		}
		return p
	}
	apiLabels := map[string]string{"app": "api", "tier": "frontend"}
	return []runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: demoNamespace}},
		web, api,
		pod("web-orphan", map[string]string{"app": "web"}, nil, "node-a", corev1.PodRunning, true),
		pod("web-legacy", map[string]string{"app": "legacy"}, web, "node-b", corev1.PodRunning, true),
		pod("api-ready", apiLabels, api, "node-a", corev1.PodRunning, true),
		pod("api-starting", apiLabels, api, "node-b", corev1.PodRunning, false),
		pod("api-unscheduled", apiLabels, api, "", corev1.PodPending, false),
	}
}

// runDemo walks through the scenario, waiting for each step to converge.
func runDemo(ctx context.Context, env *demo.Env) error {
	logger := klog.FromContext(ctx).WithName("demo")
	begin := time.Now()
	client := env.Client
	rss := client.AppsV1().ReplicaSets(demoNamespace)
	step := func(what string, cond func(context.Context) (bool, error)) error { return env.Step(ctx, what, cond) }
	scale := func(name string, replicas int32) error {
		logger.Info("Scaling", "replicaSet", klog.KRef(demoNamespace, name), "replicas", replicas)
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			rs, err := rss.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			rs.Spec.Replicas = ptr.To(replicas)
			_, err = rss.Update(ctx, rs, metav1.UpdateOptions{})
			return err
		})
	}
	all := func(conds ...func(context.Context) (bool, error)) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			for _, c := range conds {
				if ok, err := c(ctx); !ok || err != nil {
					return false, err
				}
			}
			return true, nil
		}
	}
	ownedBy := func(pod, rs string, want bool) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			p, err := client.CoreV1().Pods(demoNamespace).Get(ctx, pod, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			ref := metav1.GetControllerOf(p)
			return (ref != nil && ref.Name == rs) == want, nil
		}
	}

	if err := step("web adopts web-orphan, releases web-legacy and creates 2 Pods; api deletes its unscheduled and not-ready Pods",
		all(converged(client, "web"), converged(client, "api"), ownedBy("web-orphan", "web", true), ownedBy("web-legacy", "web", false),
			podExists(client, "api-ready"))); err != nil {
		return err
	}
	if err := scale("web", 10); err != nil {
		return err
	}
	if err := step("web at 10 ready replicas (7 created in slow-start batches of 1, 2, 4)", converged(client, "web")); err != nil {
		return err
	}
	if err := scale("web", 2); err != nil {
		return err
	}
	if err := step("web back to 2 replicas", converged(client, "web")); err != nil {
		return err
	}
	logger.Info("Demo converged", "took", time.Since(begin).Round(time.Millisecond))
	return nil
}

// converged reports whether ReplicaSet name has exactly spec.replicas active Pods, all ready
// and available, and a status that says so for its current generation.
func converged(client kubernetes.Interface, name string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		rs, err := client.AppsV1().ReplicaSets(demoNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pods, err := client.CoreV1().Pods(demoNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		owned := 0
		for i := range pods.Items {
			p := &pods.Items[i]
			if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == rs.UID && p.DeletionTimestamp == nil {
				owned++
			}
		}
		want := ptrOr(rs.Spec.Replicas, 1)
		st := rs.Status
		return st.ObservedGeneration == rs.Generation && int32(owned) == want && st.Replicas == want &&
			st.ReadyReplicas == want && st.AvailableReplicas == want, nil
	}
}

func podExists(client kubernetes.Interface, name string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Pods(demoNamespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, fmt.Errorf("pod %s was deleted: the ranking should have kept it", name)
		}
		return err == nil, err
	}
}
