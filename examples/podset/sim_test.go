package main

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/examples/podset/podset"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
	"github.com/ctrlkit/ctrlkit/testkit/sim"
)

// The PodSet controller, with its records outside the cluster (the finalizer), under the
// simulator's faults: end state and writes must be those of the run without faults, every
// PodSet must have spec.replicas Pods it controls, and the records must be those of the
// PodSets that exist.
func TestSimPodSet(t *testing.T) {
	// sim.StaleRestart finds Pods created and then deleted by a process restarted onto a
	// lagging Pod cache (the informers' first list may be served stale, and a new process has
	// no expectations yet), which a staleness guard in the library (a role gate holding the
	// workers until the caches reach a consistent read's resourceVersion) would prevent. What it
	// found besides, scaling to each PodSet version a lagging cache replays, manageReplicas now
	// guards against.
	sim.Check(t, podSetScenario(), sim.Crash(), sim.MergeEvents(30*time.Second),
		sim.Relist(30*time.Second), sim.APIErrors(20), sim.Drift())
}

func podSetScenario() sim.Scenario {
	// The records are outside the cluster: they outlive a crash of the process, and each run
	// starts with none (runs are sequential; the first process of a run makes them).
	var records *podset.MemoryRecords
	podsets := func(u *sim.User) *customresource.Client[*v1alpha1.PodSet] {
		c, err := customresource.NewClient[*v1alpha1.PodSet](u.Dynamic, v1alpha1.GVR)
		if err != nil {
			panic(err) // a GVR and a dynamic client: cannot fail
		}
		return c
	}
	scale := func(name string, n int32) sim.Step {
		return sim.Step{Name: fmt.Sprintf("scale %s to %d", name, n), Do: func(ctx context.Context, u *sim.User) error {
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				ps, err := podsets(u).Get(ctx, "default", name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				ps.Spec.Replicas = ptr.To(n)
				_, err = podsets(u).Update(ctx, ps, metav1.UpdateOptions{})
				return err
			})
		}}
	}
	newPodSet := func(name string, n int32) *v1alpha1.PodSet {
		labels := map[string]string{"app": name}
		return &v1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: v1alpha1.PodSetSpec{
			Replicas: ptr.To(n), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}},
		}}
	}
	return sim.Scenario{
		Resources: []fakecluster.Resource{{GVR: v1alpha1.GVR, Kind: v1alpha1.Kind, Namespaced: true, StatusSubresource: true}},
		Start: func(p *sim.Process) error {
			if p.Incarnation == 1 {
				records = podset.NewMemoryRecords()
			}
			c, err := podset.New(p.Factory, p.Client, p.Dynamic, podset.Options{Workers: 1, Records: records, Logger: logr.Discard()})
			if err != nil {
				return err
			}
			p.Run(c)
			return nil
		},
		Workload: []sim.Step{
			{Name: "create PodSets web (3) and batch (1)", Do: func(ctx context.Context, u *sim.User) error {
				for _, ps := range []*v1alpha1.PodSet{newPodSet("web", 3), newPodSet("batch", 1)} {
					if _, err := podsets(u).Create(ctx, ps, metav1.CreateOptions{}); err != nil {
						return err
					}
				}
				return nil
			}},
			scale("web", 5),
			scale("web", 2),
			{Name: "delete batch", Do: func(ctx context.Context, u *sim.User) error {
				return podsets(u).Delete(ctx, "default", "batch", metav1.DeleteOptions{})
			}},
			// The fake cluster has no garbage collector: without this step batch's Pod outlives
			// it, and sim.Drift's deleting it is a difference from the run without faults that no
			// cluster would show. As the collector does, it waits for batch to be gone (its
			// finalizer first), then deletes its dependents.
			{Name: "the garbage collector deletes batch's Pods", Do: func(ctx context.Context, u *sim.User) error {
				for range 600 {
					if _, err := podsets(u).Get(ctx, "default", "batch", metav1.GetOptions{}); apierrors.IsNotFound(err) {
						return u.Client.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app=batch"})
					}
					time.Sleep(time.Second) // virtual
				}
				return errors.New("batch is still there after ten minutes")
			}},
		},
		Invariants: []sim.Invariant{
			{Name: "every PodSet controls spec.replicas Pods", Check: func(ctx context.Context, u *sim.User) error {
				list, err := podsets(u).List(ctx, "default", metav1.ListOptions{})
				if err != nil {
					return err
				}
				pods, err := u.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
				if err != nil {
					return err
				}
				for _, ps := range list.Items {
					n := 0
					for _, pod := range pods.Items {
						if ref := metav1.GetControllerOf(&pod); ref != nil && ref.UID == ps.UID && pod.DeletionTimestamp == nil {
							n++
						}
					}
					if n != int(ps.Spec.DesiredReplicas()) {
						return fmt.Errorf("PodSet %s controls %d Pods, wants %d", ps.Name, n, ps.Spec.DesiredReplicas())
					}
				}
				return nil
			}},
			{Name: "the records are those of the PodSets that exist", Check: func(ctx context.Context, u *sim.User) error {
				list, err := podsets(u).List(ctx, "default", metav1.ListOptions{})
				if err != nil {
					return err
				}
				for _, ps := range list.Items {
					if !records.Has(ps.UID) {
						return fmt.Errorf("PodSet %s has no record", ps.Name)
					}
				}
				if records.Len() != len(list.Items) {
					return fmt.Errorf("%d records for %d PodSets", records.Len(), len(list.Items))
				}
				return nil
			}},
		},
	}
}
