package sharding_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/sharding"
)

// An authorizer that allows everything but patching: the ring's error
// lists each denied request, and a failed review is not taken for a denial.
func TestCheckAccessListsWhatIsDenied(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		r := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		if r.Spec.ResourceAttributes.Resource == "secrets" {
			return true, nil, errors.New("authorizer unavailable")
		}
		r.Status.Allowed = r.Spec.ResourceAttributes.Verb != "patch"
		return true, r, nil
	})
	cfg := sharding.Config{Ring: "r", Namespace: "ring-ns", Identity: "a"}
	err := sharding.CheckAccess(context.Background(), client, cfg, sharding.SharderOptions{Resource: configMaps})
	var denied *sharding.AccessError
	require.ErrorAs(t, err, &denied)
	assert.ErrorAs(t, err, new(*sharding.AccessError))
	assert.Equal(t, []string{"patch leases.coordination.k8s.io in namespace ring-ns", "patch configmaps in every namespace"}, denied.Denied)
	assert.Contains(t, err.Error(), `ring "r" may not patch`)

	err = sharding.CheckAccess(context.Background(), client, cfg, sharding.SharderOptions{Resource: configMaps, Children: []schema.GroupVersionResource{secrets}})
	assert.ErrorContains(t, err, "authorizer unavailable")
	assert.NotErrorAs(t, err, new(*sharding.AccessError))
}
