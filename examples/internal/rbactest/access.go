package rbactest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Access is one request the ServiceAccount makes: a verb on a resource (and subresource) of an
// API group, in the test's namespace unless ClusterScoped, of one object when Name is set.
type Access struct {
	Verb, Group, Resource, Subresource, Name string
	ClusterScoped                            bool
}

func (a Access) String() string {
	r := a.Resource
	if a.Subresource != "" {
		r += "/" + a.Subresource
	}
	if a.Group != "" {
		r += "." + a.Group
	}
	if a.Name != "" {
		r += " " + a.Name
	}
	return a.Verb + " " + r
}

// Allowed asks the API server's authorizer (a SubjectAccessReview, as the admin) whether the
// ServiceAccount may do a.
func (in *Install) Allowed(ctx context.Context, a Access) (bool, error) {
	attrs := &authorizationv1.ResourceAttributes{Verb: a.Verb, Group: a.Group, Resource: a.Resource, Subresource: a.Subresource, Name: a.Name}
	if !a.ClusterScoped {
		attrs.Namespace = in.Namespace
	}
	sar, err := in.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: in.User, ResourceAttributes: attrs,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + in.Namespace, "system:authenticated"}},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("access review of %s: %w", a, err)
	}
	return sar.Status.Allowed, nil
}

// AwaitAccess waits until the authorizer answers want for a: RBAC objects reach it through
// its own cache, a moment after they are written.
func (in *Install) AwaitAccess(a Access, want bool) {
	in.t.Helper()
	err := wait.PollUntilContextTimeout(in.env.Context(), 20*time.Millisecond, awaitTimeout, true, func(ctx context.Context) (bool, error) {
		got, err := in.Allowed(ctx, a)
		return got == want, err
	})
	if err != nil {
		in.t.Fatalf("rbactest: %s: still not allowed=%v for %s: %v", a, want, in.User, err)
	}
}

// boundRules are the rules of every role a binding of the manifests grants the ServiceAccount,
// as Accesses (one per verb, resource and name).
func (in *Install) boundRules() []Access {
	in.t.Helper()
	roles := map[string][]rbacv1.PolicyRule{}
	var bound []string
	for _, u := range in.m.Objects {
		switch u.GetKind() {
		case "ClusterRole", "Role":
			var r rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
				in.t.Fatalf("rbactest: %s %q: %v", u.GetKind(), u.GetName(), err)
			}
			roles[u.GetKind()+"/"+u.GetName()] = r.Rules
		case "ClusterRoleBinding", "RoleBinding":
			var b rbacv1.ClusterRoleBinding
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &b); err != nil {
				in.t.Fatalf("rbactest: %s %q: %v", u.GetKind(), u.GetName(), err)
			}
			if slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool {
				return s.Kind == "ServiceAccount" && s.Name == in.m.ServiceAccount && s.Namespace == in.m.Namespace
			}) {
				bound = append(bound, b.RoleRef.Kind+"/"+b.RoleRef.Name)
			}
		}
	}
	var out []Access
	for _, ref := range bound {
		rules, ok := roles[ref]
		if kind, name, _ := strings.Cut(ref, "/"); !ok && kind == "ClusterRole" {
			// A role the cluster has already, such as system:auth-delegator.
			r, err := in.client.RbacV1().ClusterRoles().Get(in.env.Context(), name, metav1.GetOptions{})
			if err != nil {
				in.t.Fatalf("rbactest: a binding of %s refers to %s, which neither the manifests nor the server hold: %v", in.m.ServiceAccount, ref, err)
			}
			rules, ok = r.Rules, true
		}
		if !ok {
			in.t.Fatalf("rbactest: a binding of %s refers to %s, which the manifests do not hold", in.m.ServiceAccount, ref)
		}
		for _, rule := range rules {
			for _, group := range rule.APIGroups {
				for _, res := range rule.Resources {
					resource, sub, _ := strings.Cut(res, "/")
					for _, verb := range rule.Verbs {
						names := rule.ResourceNames
						if len(names) == 0 {
							names = []string{""}
						}
						for _, name := range names {
							out = append(out, Access{Verb: verb, Group: group, Resource: resource, Subresource: sub, Name: name})
						}
					}
				}
			}
		}
	}
	return out
}

// awaitGranted waits until the authorizer grants every bound rule: the manifests grant what
// they say, and the binary will not start before RBAC caught up.
func (in *Install) awaitGranted() {
	in.t.Helper()
	rules := in.boundRules()
	if len(rules) == 0 {
		in.t.Fatalf("rbactest: no rule is bound to ServiceAccount %q", in.m.ServiceAccount)
	}
	for _, a := range rules {
		in.AwaitAccess(a, true)
	}
}
