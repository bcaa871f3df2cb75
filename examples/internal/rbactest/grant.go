package rbactest

import (
	"errors"
	"fmt"
	"os"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// Revoke takes verb away from the rules of a role of the manifests (kind "ClusterRole" or
// "Role", name as in the manifests) for one resource ("pods", "podsets/status") of group,
// leaving the role's other grants as they were, and waits until the authorizer refuses it. The
// returned restore puts the role's rules back and waits until the authorizer grants a again.
func (in *Install) Revoke(kind, name string, a Access) (restore func()) {
	in.t.Helper()
	ctx := in.env.Context()
	rbac := in.client.RbacV1()
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	var orig []rbacv1.PolicyRule
	update := func(edit func([]rbacv1.PolicyRule) []rbacv1.PolicyRule) error {
		switch kind {
		case "ClusterRole":
			r, err := rbac.ClusterRoles().Get(ctx, in.names["ClusterRole/"+name], metav1.GetOptions{})
			if err != nil {
				return err
			}
			orig, r.Rules = r.Rules, edit(r.Rules)
			_, err = rbac.ClusterRoles().Update(ctx, r, metav1.UpdateOptions{})
			return err
		case "Role":
			r, err := rbac.Roles(in.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			orig, r.Rules = r.Rules, edit(r.Rules)
			_, err = rbac.Roles(in.Namespace).Update(ctx, r, metav1.UpdateOptions{})
			return err
		}
		return fmt.Errorf("kind %q: want ClusterRole or Role", kind)
	}
	found := false
	err := update(func(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
		var out []rbacv1.PolicyRule
		out, found = withoutVerb(rules, a.Group, resource, a.Verb)
		return out
	})
	if err != nil {
		in.t.Fatalf("rbactest: revoking %s from %s %q: %v", a, kind, name, err)
	}
	if !found {
		in.t.Fatalf("rbactest: %s %q has no rule granting %s", kind, name, a)
	}
	revoked := orig
	in.AwaitAccess(a, false)
	return func() {
		in.t.Helper()
		if err := update(func([]rbacv1.PolicyRule) []rbacv1.PolicyRule { return revoked }); err != nil {
			in.t.Fatalf("rbactest: restoring %s %q: %v", kind, name, err)
		}
		in.AwaitAccess(a, true)
	}
}

// withoutVerb returns rules with verb on resource of group taken away, every other grant kept:
// a rule that grants it is split into the rule without the resource, the resource in the
// rule's other groups, and the resource in group without the verb (each dropped when empty). found reports whether any rule granted it.
func withoutVerb(rules []rbacv1.PolicyRule, group, resource, verb string) (out []rbacv1.PolicyRule, found bool) {
	for _, r := range rules {
		if !slices.Contains(r.APIGroups, group) || !slices.Contains(r.Resources, resource) || !slices.Contains(r.Verbs, verb) {
			out = append(out, r)
			continue
		}
		found = true
		others, otherGroups, this := *r.DeepCopy(), *r.DeepCopy(), *r.DeepCopy()
		others.Resources = slices.DeleteFunc(others.Resources, func(s string) bool { return s == resource })
		otherGroups.Resources = []string{resource}
		otherGroups.APIGroups = slices.DeleteFunc(otherGroups.APIGroups, func(s string) bool { return s == group })
		this.Resources, this.APIGroups = []string{resource}, []string{group}
		this.Verbs = slices.DeleteFunc(this.Verbs, func(s string) bool { return s == verb })
		for _, keep := range []rbacv1.PolicyRule{others, otherGroups, this} {
			if len(keep.APIGroups) > 0 && len(keep.Resources) > 0 && len(keep.Verbs) > 0 {
				out = append(out, keep)
			}
		}
	}
	return out, found
}
