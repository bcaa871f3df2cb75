package ownerref_test

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/ownerref"
)

// A ReplicaSet claims the Pods its informer lists: it adopts the matching orphan, keeps what
// it owns, releases the Pod whose labels changed and ignores another controller's Pod.
func Example() {
	ctx := context.Background()
	gvk := appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "rs-1"}}
	other := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db", UID: "rs-2"}}

	pod := func(name string, app string, owner *appsv1.ReplicaSet) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": app},
		}}
		if owner != nil {
			p.OwnerReferences = []metav1.OwnerReference{*ownerref.NewControllerRef(owner, gvk)}
		}
		return p
	}
	pods := []*corev1.Pod{
		pod("orphan", "web", nil),
		pod("mine", "web", rs),
		pod("relabelled", "debug", rs),
		pod("theirs", "web", other),
	}
	client := fake.NewClientset(rs, pods[0], pods[1], pods[2], pods[3])

	canAdopt := ownerref.RecheckOwner(rs, ownerref.GetFresh(client.AppsV1().ReplicaSets("default").Get, "web"))
	claimer := ownerref.NewClaimer[*corev1.Pod](rs, gvk, labels.SelectorFromSet(labels.Set{"app": "web"}),
		canAdopt, ownerref.PodsPatcher(client))
	owned, err := claimer.ClaimObjects(ctx, pods)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	for _, p := range owned {
		fmt.Println("owns", p.Name)
	}
	for _, name := range []string{"orphan", "relabelled", "theirs"} {
		p, _ := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		fmt.Printf("%s controlled by web: %v\n", name, ownerref.IsControlledBy(p, rs))
	}
	// Output:
	// owns orphan
	// owns mine
	// orphan controlled by web: true
	// relabelled controlled by web: false
	// theirs controlled by web: false
}

// The informer still shows the ReplicaSet alive, but the API server already has its
// deletionTimestamp: the uncached recheck refuses every adoption.
func ExampleRecheckOwner() {
	ctx := context.Background()
	gvk := appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	cached := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "rs-1"}}
	fresh := cached.DeepCopy()
	fresh.DeletionTimestamp = &metav1.Time{}
	fresh.Finalizers = []string{"foregroundDeletion"}
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "orphan", UID: "p-1",
		Labels: map[string]string{"app": "web"}}}
	client := fake.NewClientset(fresh, orphan)

	claimer := ownerref.NewClaimer[*corev1.Pod](cached, gvk, labels.SelectorFromSet(labels.Set{"app": "web"}),
		ownerref.RecheckOwner(cached, ownerref.GetFresh(client.AppsV1().ReplicaSets("default").Get, "web")),
		ownerref.PodsPatcher(client))
	owned, err := claimer.ClaimObjects(ctx, []*corev1.Pod{orphan})
	fmt.Println("owned:", len(owned))
	fmt.Println("refused because the owner is being deleted:", errors.Is(err, ownerref.ErrOwnerBeingDeleted))
	// Output:
	// owned: 0
	// refused because the owner is being deleted: true
}

// ClientPatcher turns any client-go typed client into a Patcher; here a Deployment adopts a
// ReplicaSet.
func ExampleClientPatcher() {
	ctx := context.Background()
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "d-1"}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-5d8f", UID: "rs-1",
		Labels: map[string]string{"app": "web"}}}
	client := fake.NewClientset(rs)

	claimer := ownerref.NewClaimer[*appsv1.ReplicaSet](deploy, appsv1.SchemeGroupVersion.WithKind("Deployment"),
		labels.SelectorFromSet(labels.Set{"app": "web"}), nil, ownerref.ClientPatcher(client.AppsV1().ReplicaSets))
	owned, err := claimer.ClaimObjects(ctx, []*appsv1.ReplicaSet{rs})
	fmt.Println(len(owned), err)
	got, _ := client.AppsV1().ReplicaSets("default").Get(ctx, "web-5d8f", metav1.GetOptions{})
	ref := ownerref.ControllerOf(got)
	fmt.Println(ref.Kind, ref.Name, *ref.Controller, *ref.BlockOwnerDeletion)
	// Output:
	// 1 <nil>
	// Deployment web true true
}

func ExampleControllerOf() {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	fmt.Println(ownerref.ControllerOf(pod) == nil)

	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "rs-1"}}
	pod.OwnerReferences = []metav1.OwnerReference{*ownerref.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}
	fmt.Println(ownerref.ControllerOf(pod).Name, ownerref.IsControlledBy(pod, rs))
	// Output:
	// true
	// web true
}
