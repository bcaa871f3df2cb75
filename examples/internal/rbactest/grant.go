package rbactest

import (
	"errors"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Grant applies more of an example's manifests on top of the installed ones, as an admin
// applies an opt-in file later (such as examples/podset/deploy/rbac-webhook.yaml, the rules of a
// mode the binary runs in only with a flag): files that hold only roles and bindings, checked as
// Load checks them (no wildcard, namespaced objects in the manifests' namespace), placed as Apply
// places them, and Revoke can take their rules away. It waits until the authorizer grants every
// rule bound to the ServiceAccount. Failures fail the test.
func (in *Install) Grant(paths ...string) {
	in.t.Helper()
	var objs []*unstructured.Unstructured
	var errs []error
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			in.t.Fatalf("rbactest: reading manifests: %v", err)
		}
		docs, err := decode(data)
		if err != nil {
			in.t.Fatalf("rbactest: %s: %v", p, err)
		}
		for _, u := range docs {
			switch kind, ns := u.GetKind(), u.GetNamespace(); {
			case kind != "ClusterRole" && kind != "ClusterRoleBinding" && kind != "Role" && kind != "RoleBinding":
				errs = append(errs, fmt.Errorf("%s: %s %q: %w: Grant applies only roles and bindings", p, kind, u.GetName(), ErrInvalidManifest))
			case kinds[u.GroupVersionKind()].namespaced && ns != in.m.Namespace:
				errs = append(errs, fmt.Errorf("%s: %s %q: %w: namespace %q, where the installed objects are in %q", p, kind, u.GetName(), ErrInvalidManifest, ns, in.m.Namespace))
			case kind == "ClusterRole" || kind == "Role":
				errs = append(errs, checkRules(u)...)
			}
		}
		objs = append(objs, docs...)
	}
	if err := errors.Join(errs...); err != nil {
		in.t.Fatalf("rbactest: %v", err)
	}
	in.m.Objects = append(in.m.Objects, objs...)
	in.create(objs)
	in.awaitGranted()
}
