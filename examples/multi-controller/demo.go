package main

import (
	"context"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/examples/configmap-propagator/propagator"
	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
)

// seed is the in-memory cluster: a source namespace with one ConfigMap to propagate, two target
// namespaces, and a few Pods for the pod-counter.
func seed(src string) []runtime.Object {
	target := map[string]string{propagator.LabelPropagate: "true"}
	objs := []runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: src}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: target}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b", Labels: target}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: src, Name: "shared-config",
			Labels: map[string]string{propagator.LabelPropagate: "true"}}, Data: map[string]string{"region": "eu-west-1"}},
	}
	for i, ns := range []string{"team-a", "team-a", "team-b"} {
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-" + strconv.Itoa(i)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}})
	}
	return objs
}

// runDemo waits for the propagator's copies and, when the pod-counter runs, for the counts,
// then adds a Pod and waits for its namespace's count to follow.
func runDemo(ctx context.Context, env *demo.Env, o *options) error {
	logger := klog.FromContext(ctx).WithName("demo")
	client := env.Client
	step := func(what string, cond func(context.Context) (bool, error)) error { return env.Step(ctx, what, cond) }
	copied := func(ctx context.Context) (bool, error) {
		for _, ns := range []string{"team-a", "team-b"} {
			_, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "shared-config", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
		}
		return true, nil
	}
	counted := func(want map[string]string) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			for name, n := range want {
				ns, err := client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				if ns.Annotations[AnnotationPodCount] != n {
					return false, nil
				}
			}
			return true, nil
		}
	}

	if err := step("shared-config copied to team-a and team-b", copied); err != nil {
		return err
	}
	if !env.Gate.Enabled(PodCounter) {
		logger.Info("Demo converged (pod-counter is off: try --feature-gates=PodCounter=true)")
		return nil
	}
	if err := step("pods counted: team-a 2, team-b 1, "+o.sourceNamespace+" 0",
		counted(map[string]string{"team-a": "2", "team-b": "1", o.sourceNamespace: "0"})); err != nil {
		return err
	}
	logger.Info("Creating a Pod in team-b")
	if _, err := client.CoreV1().Pods("team-b").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", GenerateName: "app-"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := step("team-b counts 2 pods", counted(map[string]string{"team-b": "2"})); err != nil {
		return err
	}
	logger.Info("Demo converged")
	return nil
}
