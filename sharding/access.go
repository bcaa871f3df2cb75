package sharding

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
)

// AccessError lists the requests the ring needs and may not make (errors.As
// finds it in CheckAccess's error).
type AccessError struct {
	Ring string
	// Denied names each refused request, e.g. "patch configmaps in
	// namespace default".
	Denied []string
}

func (e *AccessError) Error() string {
	return fmt.Sprintf("sharding: access denied: ring %q may not %s", e.Ring, strings.Join(e.Denied, "; "))
}

var leases = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}

// CheckAccess asks the API server, with SelfSubjectAccessReviews, whether
// the identity behind client may do everything a member of the ring does:
// hold and watch Leases in cfg.Namespace, and list, watch and patch the
// sharded resource and its children (the sharder labels them, the dispatchers
// acknowledge drains). Call it before starting anything: without it, a
// missing permission shows only later, as writes failing one by one and keys
// that never move. A denial is an *AccessError listing every denied request; a failed review is returned
// wrapped.
func CheckAccess(ctx context.Context, client kubernetes.Interface, cfg Config, opts SharderOptions) error {
	cfg = cfg.WithDefaults()
	if client == nil {
		return &ConfigError{Field: "client", Rule: "client must not be nil"}
	}
	type want struct {
		gvr       schema.GroupVersionResource
		namespace string
		verbs     []string
	}
	wants := []want{{leases, cfg.Namespace, []string{"get", "list", "watch", "create", "update", "patch"}}}
	for _, gvr := range append([]schema.GroupVersionResource{opts.Resource}, opts.Children...) {
		wants = append(wants, want{gvr, opts.Namespace, []string{"list", "watch", "patch"}})
	}
	denied := &AccessError{Ring: cfg.Ring}
	for _, w := range wants {
		for _, verb := range w.verbs {
			r, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: w.namespace, Verb: verb, Group: w.gvr.Group, Version: w.gvr.Version, Resource: w.gvr.Resource,
				}},
			}, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("sharding: ring %q: reviewing access to %s: %w", cfg.Ring, w.gvr.GroupResource(), err)
			}
			if !r.Status.Allowed {
				where := "in every namespace"
				if w.namespace != "" {
					where = "in namespace " + w.namespace
				}
				denied.Denied = append(denied.Denied, fmt.Sprintf("%s %s %s", verb, w.gvr.GroupResource(), where))
			}
		}
	}
	if len(denied.Denied) > 0 {
		return denied
	}
	return nil
}
