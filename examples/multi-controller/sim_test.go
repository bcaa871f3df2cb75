package main

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/ctrlkit/ctrlkit/examples/configmap-propagator/propagator"
	"github.com/ctrlkit/ctrlkit/testkit/sim"
)

const simSource = "ctrlkit-system"

// Both controllers of the binary, the pod-counter's gate on, sharing one process's informer
// factory as addControllers wires them, under the simulator's faults: end state and writes must
// be those of the run without faults, every Namespace's count must be its active Pods, and the
// shared ConfigMap must be copied into every target.
func TestSimMultiController(t *testing.T) {
	sim.Check(t, multiScenario(), sim.Crash(), sim.StaleRestart(30*time.Second), sim.MergeEvents(30*time.Second),
		sim.Relist(30*time.Second), sim.APIErrors(20), sim.Drift())
}

func multiScenario() sim.Scenario {
	pod := func(ns, name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}
	}
	return sim.Scenario{
		Objects: seed(simSource),
		Start: func(p *sim.Process) error {
			// addControllers's constructors, with one worker each (it takes --workers).
			prop, err := propagator.New(p.Factory, p.Client, propagator.Options{SourceNamespace: simSource, Workers: 1})
			if err != nil {
				return err
			}
			pc, err := newPodCounter(p.Factory, p.Client, 1)
			if err != nil {
				return err
			}
			p.Run(prop, pc)
			return nil
		},
		Workload: []sim.Step{
			{Name: "start a Pod in team-b", Do: func(ctx context.Context, u *sim.User) error {
				_, err := u.Client.CoreV1().Pods("team-b").Create(ctx, pod("team-b", "worker"), metav1.CreateOptions{})
				return err
			}},
			{Name: "a Pod of team-a succeeds", Do: func(ctx context.Context, u *sim.User) error {
				return retry.RetryOnConflict(retry.DefaultRetry, func() error {
					p, err := u.Client.CoreV1().Pods("team-a").Get(ctx, "app-0", metav1.GetOptions{})
					if err != nil {
						return err
					}
					p.Status.Phase = corev1.PodSucceeded
					_, err = u.Client.CoreV1().Pods("team-a").UpdateStatus(ctx, p, metav1.UpdateOptions{})
					return err
				})
			}},
			{Name: "create a target namespace team-c with a Pod", Do: func(ctx context.Context, u *sim.User) error {
				_, err := u.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-c",
					Labels: map[string]string{propagator.LabelPropagate: "true"}}}, metav1.CreateOptions{})
				if err != nil {
					return err
				}
				_, err = u.Client.CoreV1().Pods("team-c").Create(ctx, pod("team-c", "web"), metav1.CreateOptions{})
				return err
			}},
			{Name: "delete a Pod of team-a", Do: func(ctx context.Context, u *sim.User) error {
				return u.Client.CoreV1().Pods("team-a").Delete(ctx, "app-1", metav1.DeleteOptions{})
			}},
		},
		Invariants: []sim.Invariant{
			{Name: "every Namespace's pod count is its active Pods", Check: countsMatchPods},
			{Name: "every target namespace holds a copy of shared-config", Check: func(ctx context.Context, u *sim.User) error {
				for _, ns := range []string{"team-a", "team-b", "team-c"} {
					cp, err := u.Client.CoreV1().ConfigMaps(ns).Get(ctx, "shared-config", metav1.GetOptions{})
					if err != nil {
						return err
					}
					if cp.Annotations[propagator.AnnotationSource] != simSource+"/shared-config" {
						return fmt.Errorf("%s/shared-config is not a copy: %v", ns, cp.Annotations)
					}
				}
				return nil
			}},
		},
	}
}

// countsMatchPods checks the pod-counter's promise against the world.
func countsMatchPods(ctx context.Context, u *sim.User) error {
	nss, err := u.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, ns := range nss.Items {
		pods, err := u.Client.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		n := 0
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				n++
			}
		}
		if got := ns.Annotations[AnnotationPodCount]; got != strconv.Itoa(n) {
			return fmt.Errorf("namespace %s: count %q, %d active Pods", ns.Name, got, n)
		}
	}
	return nil
}
