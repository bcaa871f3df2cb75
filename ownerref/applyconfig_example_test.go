package ownerref_test

import (
	"encoding/json"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/ctrlkit/ctrlkit/ownerref"
)

// A cluster-scoped Tenant owns the Namespace and the ResourceQuota its controller applies
// server-side; a namespaced owner cannot own the cluster-scoped Namespace.
func ExampleSetControllerReferenceApplyConfig() {
	tenant := &unstructured.Unstructured{}
	tenant.SetAPIVersion("tenancy.example.com/v1")
	tenant.SetKind("Tenant")
	tenant.SetName("acme")
	tenant.SetUID("t-1")

	ns := corev1ac.Namespace("acme-prod")
	quota := corev1ac.ResourceQuota("compute", "acme-prod").WithSpec(corev1ac.ResourceQuotaSpec())
	if err := ownerref.SetControllerReferenceApplyConfig(tenant, ns); err != nil {
		fmt.Println(err)
		return
	}
	if err := ownerref.SetControllerReferenceApplyConfig(tenant, quota); err != nil {
		fmt.Println(err)
		return
	}
	// What the apply sends (client.ApplyConfig(ctx, quotas, quota, opts)):
	refs, _ := json.Marshal(quota.OwnerReferences)
	fmt.Println(string(refs))

	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "acme-prod", Name: "web", UID: "rs-1"}}
	err := ownerref.SetControllerReferenceApplyConfig(rs, corev1ac.Namespace("web"))
	fmt.Println(errors.Is(err, ownerref.ErrInvalidOwner))
	// Output:
	// [{"apiVersion":"tenancy.example.com/v1","kind":"Tenant","name":"acme","uid":"t-1","controller":true,"blockOwnerDeletion":true}]
	// true
}
