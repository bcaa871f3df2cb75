package manager_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/sharding"
)

var (
	configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secretsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

func shardingOptions(ring, identity string) *manager.ShardingOptions {
	return &manager.ShardingOptions{
		Config:   sharding.Config{Ring: ring, Namespace: "ring", Identity: identity},
		Sharder:  sharding.SharderOptions{Resource: configMapsGVR, Children: []schema.GroupVersionResource{secretsGVR}},
		Metadata: metadatafake.NewSimpleMetadataClient(runtime.NewScheme()),
	}
}

func noop() controller.Reconciler[controller.Key] {
	return controller.ReconcilerFunc[controller.Key](func(context.Context, controller.Key) (controller.Result, error) {
		return controller.Result{}, nil
	})
}

// Bad input is refused by New, before anything starts, naming the culprit.
func TestShardingOptionsRefusedByNew(t *testing.T) {
	client := fake.NewClientset()

	bad := shardingOptions("Web_Ring", "m-0")
	_, err := manager.New(manager.Options{Client: client, Sharding: bad})
	assert.ErrorIs(t, err, sharding.ErrInvalidConfig)
	assert.ErrorContains(t, err, `ring "Web_Ring" must be a DNS-1123 label`)

	bad = shardingOptions("web", "")
	_, err = manager.New(manager.Options{Client: client, Sharding: bad})
	assert.ErrorIs(t, err, sharding.ErrInvalidConfig)
	assert.ErrorContains(t, err, "identity")

	bad = shardingOptions("web", "m-0")
	bad.Config.RenewDeadline = bad.Config.WithDefaults().LeaseDuration
	_, err = manager.New(manager.Options{Client: client, Sharding: bad})
	assert.ErrorIs(t, err, sharding.ErrInvalidConfig)
	assert.ErrorContains(t, err, "leaseDuration 15s must be greater than renewDeadline 15s")

	bad = shardingOptions("web", "m-0")
	bad.Metadata = nil
	_, err = manager.New(manager.Options{Client: client, Sharding: bad})
	var oe *manager.OptionsError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "manager.Options.Sharding.Metadata", oe.Field)
	assert.Contains(t, oe.Reason, "Client and no Config")

	bad = shardingOptions("web", "m-0")
	bad.Sharder.Resource = schema.GroupVersionResource{}
	_, err = manager.New(manager.Options{Client: client, Sharding: bad})
	assert.ErrorIs(t, err, sharding.ErrInvalidConfig)

	// With a Config, the metadata client is built from it.
	ok := shardingOptions("web", "m-0")
	ok.Metadata = nil
	mgr, err := manager.New(manager.Options{Config: &rest.Config{Host: "https://127.0.0.1:1"}, Sharding: ok})
	require.NoError(t, err)
	assert.NotNil(t, mgr.ShardFactory())
	assert.Equal(t, "m-0", mgr.ShardMember().Identity())
	assert.Nil(t, mgr.ShardAssigner(), "no admission-time assignment unless asked for")
	mgr.ShardFactory().Shutdown()
	mgr.Factory().Shutdown()

	ok = shardingOptions("web", "m-0")
	ok.AssignAtAdmission = true
	mgr, err = manager.New(manager.Options{Client: client, Sharding: ok})
	require.NoError(t, err)
	assert.NotNil(t, mgr.ShardAssigner())
	mgr.ShardFactory().Shutdown()
	mgr.Factory().Shutdown()

	bad = shardingOptions("web", "m-0")
	bad.Config.WriteQPS = -1
	_, err = manager.New(manager.Options{Client: client, Sharding: bad})
	assert.ErrorIs(t, err, sharding.ErrInvalidConfig)
	assert.ErrorContains(t, err, "write QPS -1 must not be negative")
}

func TestAddShardedRefusesMistakes(t *testing.T) {
	plain, err := manager.New(manager.Options{Client: fake.NewClientset()})
	require.NoError(t, err)
	t.Cleanup(plain.Factory().Shutdown)
	assert.Nil(t, plain.ShardFactory())
	assert.Nil(t, plain.ShardMember())
	c, err := controller.New("cm", noop(), controller.Options[controller.Key]{})
	require.NoError(t, err)
	cms, err := informer.For[*corev1.ConfigMap](plain.Factory())
	require.NoError(t, err)
	assert.ErrorIs(t, manager.AddSharded(plain, c, cms), manager.ErrNotSharded)

	mgr, err := manager.New(manager.Options{Client: fake.NewClientset(), Sharding: shardingOptions("web", "m-0")})
	require.NoError(t, err)
	t.Cleanup(mgr.ShardFactory().Shutdown)
	t.Cleanup(mgr.Factory().Shutdown)
	owners, err := informer.For[*corev1.ConfigMap](mgr.ShardFactory())
	require.NoError(t, err)
	secrets, err := informer.For[*corev1.Secret](mgr.ShardFactory())
	require.NoError(t, err)
	pods, err := informer.For[*corev1.Pod](mgr.ShardFactory())
	require.NoError(t, err)

	var oe *manager.OptionsError
	err = manager.AddSharded(mgr, c, secrets)
	require.ErrorAs(t, err, &oe)
	assert.Contains(t, oe.Reason, "the ring \"web\" shards configmaps")
	err = manager.AddSharded(mgr, c, owners, pods)
	require.ErrorAs(t, err, &oe)
	assert.Contains(t, oe.Reason, "not one of the ring \"web\"'s children")

	err = manager.AddSharded(mgr, (*controller.Controller[controller.Key])(nil), owners)
	require.ErrorAs(t, err, &oe, "a typed nil controller is refused, not called")

	require.NoError(t, manager.AddSharded(mgr, c, owners, secrets))
	assert.ErrorIs(t, manager.AddSharded(mgr, c, owners, secrets), manager.ErrDuplicateName)
	assert.ErrorIs(t, mgr.Add(c), manager.ErrDuplicateName, "a sharded controller is not also a plain one")
	assert.ErrorIs(t, mgr.AddReadyzCheck("shard-web", func(*http.Request) error { return nil }), manager.ErrDuplicateCheck,
		"the ring's readyz check is there")
}

// Start asks the API server whether the ring may do its work before it
// starts anything, and names what it may not do.
func TestShardingStartChecksAccess(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		r := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		attr := r.Spec.ResourceAttributes
		r.Status.Allowed = !(attr.Resource == "configmaps" && attr.Verb == "patch")
		return true, r, nil
	})
	mgr, err := manager.New(manager.Options{Client: client, Sharding: shardingOptions("web", "m-0")})
	require.NoError(t, err)
	t.Cleanup(mgr.ShardFactory().Shutdown)
	t.Cleanup(mgr.Factory().Shutdown)
	err = mgr.Start(context.Background())
	assert.ErrorAs(t, err, new(*sharding.AccessError))
	assert.ErrorContains(t, err, `ring "web" may not patch configmaps in every namespace`)
	assert.Empty(t, mgr.HealthProbeAddr(), "nothing was started")
}
