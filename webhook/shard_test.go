package webhook_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/sharding"
	"github.com/ctrlkit/ctrlkit/webhook"
)

var rsKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// memberLease is the Lease of member id of ring "web" in "ops", held by id's process "<id>_1"
// and renewed now.
func memberLease(id string) *coordinationv1.Lease {
	now := metav1.NewMicroTime(time.Now())
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "web." + id, Labels: map[string]string{sharding.RingLabel: "web"}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: new(id + "_1"), RenewTime: &now, AcquireTime: &now},
	}
}

// runAssigner runs ring "web"'s Assigner over the members' Leases until the test ends, and
// waits until it has seen them.
func runAssigner(t *testing.T, members ...string) *sharding.Assigner {
	t.Helper()
	var objs []runtime.Object
	for _, id := range members {
		objs = append(objs, memberLease(id))
	}
	a, err := sharding.NewAssigner(fake.NewClientset(objs...), sharding.Config{Ring: "web", Namespace: "ops", Identity: "web-0"}, sharding.AssignerOptions{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	require.Eventually(t, func() bool {
		return a.Assign(&metav1.ObjectMeta{Namespace: "default", Name: "probe"}) != ""
	}, 10*time.Second, time.Millisecond, "the assigner never saw the member Leases")
	return a
}

func review(op admissionv1.Operation, object string) *admissionv1.AdmissionRequest {
	return &admissionv1.AdmissionRequest{
		UID: "1", Operation: op, Namespace: "default",
		Kind:   metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"},
		Object: runtime.RawExtension{Raw: []byte(object)},
	}
}

// A new object is labelled for the member the ring over the live members picks, stamped for
// that member's Lease holder; what it copied of another object's assignment (a drain label, a
// children barrier, a stale holder) is replaced. Updates, objects without a name yet and a
// ring nobody is live in are admitted untouched.
func TestShardAssigning(t *testing.T) {
	a := runAssigner(t, "a", "b", "c")
	h, err := webhook.NewShardAssigning(rsKind, a)
	require.NoError(t, err)

	resp := h.Handle(context.Background(), review(admissionv1.Create,
		`{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"namespace":"default","name":"web","labels":{"app":"web","drain.shard.ctrlkit.dev/web":"true"},`+
			`"annotations":{"shard.ctrlkit.dev/web-children-rv":"pods=9","shard.ctrlkit.dev/web-holder":"z_0"}},"spec":{"replicas":2}}`))
	require.True(t, resp.Allowed, "%+v", resp.Result)
	want := sharding.NewRing("web", []string{"a", "b", "c"}).Owner("default/web")
	var ops []webhook.PatchOperation
	require.NoError(t, json.Unmarshal(resp.Patch, &ops))
	got := map[string]string{}
	for _, op := range ops {
		got[op.Op+" "+op.Path] = string(op.Value)
	}
	assert.Equal(t, map[string]string{
		"add /metadata/labels/shard.ctrlkit.dev~1web":                     `"` + want + `"`,
		"remove /metadata/labels/drain.shard.ctrlkit.dev~1web":            "",
		"remove /metadata/annotations/shard.ctrlkit.dev~1web-children-rv": "",
		"replace /metadata/annotations/shard.ctrlkit.dev~1web-holder":     `"` + want + `_1"`,
	}, got)

	for name, req := range map[string]*admissionv1.AdmissionRequest{
		"update":        review(admissionv1.Update, `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"namespace":"default","name":"web"}}`),
		"generate name": review(admissionv1.Create, `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"namespace":"default","generateName":"web-"}}`),
	} {
		resp := h.Handle(context.Background(), req)
		assert.True(t, resp.Allowed, name)
		assert.Empty(t, resp.Patch, name)
	}

	_, err = webhook.NewShardAssigning(rsKind, nil)
	assert.ErrorIs(t, err, webhook.ErrInvalidHandler)
}

// Before Run has seen the Leases, or with every Lease released, the assigner leaves new
// objects to the sharder.
func TestShardAssigningWithoutMembers(t *testing.T) {
	a, err := sharding.NewAssigner(fake.NewClientset(), sharding.Config{Ring: "web", Namespace: "ops", Identity: "web-0"}, sharding.AssignerOptions{})
	require.NoError(t, err)
	assert.Empty(t, a.Assign(&metav1.ObjectMeta{Namespace: "default", Name: "web"}), "not running")
	released := memberLease("a")
	released.Spec.HolderIdentity = nil
	a, err = sharding.NewAssigner(fake.NewClientset(released), sharding.Config{Ring: "web", Namespace: "ops", Identity: "web-0"}, sharding.AssignerOptions{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); require.NoError(t, <-done) }()
	require.Eventually(t, a.HasSynced, 10*time.Second, time.Millisecond)
	obj := &metav1.ObjectMeta{Namespace: "default", Name: "web"}
	assert.Empty(t, a.Assign(obj), "nobody holds a member Lease")
	assert.Empty(t, obj.Labels)
}
