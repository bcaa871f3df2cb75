package client_test

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// PatchStatus writes a status only when it changed, with observedGeneration set for you. The
// object passed (here as a cache would hold it) is never modified.
func ExamplePatchStatus() {
	ctx := context.Background()
	c, _ := fakecluster.New(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}})
	deployments, _ := client.For[*appsv1.Deployment](c.Clientset())
	cached, _ := deployments.Get(ctx, "default", "web", metav1.GetOptions{})

	c.ClearActions()
	ready := func(d *appsv1.Deployment) error {
		d.Status.ReadyReplicas = 3
		return nil
	}
	obj := cached
	for range 2 {
		out, res, err := client.PatchStatus(ctx, deployments, obj, ready)
		fmt.Println(res, err, out.Status.ReadyReplicas, out.Status.ObservedGeneration)
		obj = out
	}
	for _, a := range c.Actions() {
		if p, ok := a.(interface{ GetPatch() []byte }); ok {
			fmt.Printf("patch %q %s\n", a.GetSubresource(), p.GetPatch())
		}
	}
	fmt.Println("the cached object still has", cached.Status.ReadyReplicas)
	// Output:
	// updatedStatusOnly <nil> 3 1
	// unchanged <nil> 3 1
	// patch "status" {"status":{"observedGeneration":1,"readyReplicas":3}}
	// the cached object still has 0
}

// Conditions of a custom resource: meta.SetStatusCondition sets or merges one by type and
// keeps its lastTransitionTime while its status stays; PatchStatus records the generation on
// each, so a pass that changed nothing writes nothing.
func ExamplePatchStatus_conditions() {
	ctx := context.Background()
	c, _ := fakecluster.NewWithOptions(fakecluster.Options{Resources: []fakecluster.Resource{{
		GVR: v1alpha1.GVR, Kind: v1alpha1.Kind, Namespaced: true, StatusSubresource: true,
	}}})
	podsets, _ := customresource.NewClient[*v1alpha1.PodSet](c.Dynamic(), v1alpha1.GVR)
	ps, _ := podsets.Create(ctx, &v1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}, metav1.CreateOptions{})

	available := func(ps *v1alpha1.PodSet) error {
		meta.SetStatusCondition(&ps.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionAvailable,
			Status: metav1.ConditionTrue, Reason: "ReplicasReady", Message: "2 of 2 Pods ready"})
		return nil
	}
	for range 2 {
		out, res, err := client.PatchStatus(ctx, podsets, ps, available)
		if err != nil {
			fmt.Println(err)
			return
		}
		cond := meta.FindStatusCondition(out.Status.Conditions, v1alpha1.ConditionAvailable)
		fmt.Println(res, cond.Status, cond.Reason, "observedGeneration", cond.ObservedGeneration)
		ps = out
	}
	// Output:
	// updatedStatusOnly True ReplicasReady observedGeneration 1
	// unchanged True ReplicasReady observedGeneration 1
}
