package owner_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/internal/owner"
)

// A cluster-scoped Tenant owns a RoleBinding in a namespace: the owner's key has no namespace.
func ExampleResolver_Keys() {
	tenants := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "tenants"}
	cached := map[string]types.UID{"acme": "uid-1"} // the Tenants' cache, by key
	r := owner.NewResolver(tenants, "Tenant",
		func(ns, name string) (types.UID, bool) { uid, ok := cached[name]; return uid, ok && ns == "" },
		func() bool { return true }, nil)
	binding := &metav1.ObjectMeta{Namespace: "team-a", Name: "acme-admins", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "example.com/v1", Kind: "Tenant", Name: "acme", UID: "uid-1", Controller: new(true)}}}
	keys, n := r.Keys(binding)
	fmt.Println(keys[:n])
	// Output: [acme]
}
