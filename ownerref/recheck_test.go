package ownerref_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/ownerref"
)

func fixed(obj metav1.Object, err error) func(context.Context) (metav1.Object, error) {
	return func(context.Context) (metav1.Object, error) { return obj, err }
}

func TestRecheckDeletionTimestamp(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("connection refused")
	cases := []struct {
		name    string
		get     func(context.Context) (metav1.Object, error)
		wantErr error  // matched with errors.Is; nil: no error
		wantMsg string // substring, when an error is expected
	}{
		{name: "alive", get: fixed(newOwner(), nil)},
		{name: "replaced is not its concern", get: fixed(newOwner(func(rs *appsv1.ReplicaSet) { rs.UID = "x" }), nil)},
		{
			name: "being deleted", get: fixed(newOwner(deleting), nil), wantErr: ownerref.ErrOwnerBeingDeleted,
			wantMsg: "owner is being deleted: default/web has deletionTimestamp 2023-11-14T22:13:20Z",
		},
		{name: "get fails", get: fixed(nil, boom), wantErr: boom, wantMsg: "cannot recheck the owner uncached: connection refused"},
		{name: "typed nil object", get: fixed((*appsv1.ReplicaSet)(nil), nil), wantMsg: "the getter returned no object"},
		{name: "nil getter", get: nil, wantErr: ownerref.ErrInvalidClaimer},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ownerref.RecheckDeletionTimestamp(tc.get)(ctx)
			if tc.wantErr == nil && tc.wantMsg == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			if tc.wantErr != nil {
				assert.ErrorIs(t, err, tc.wantErr)
			}
			assert.Contains(t, err.Error(), tc.wantMsg)
		})
	}
}

func TestRecheckOwner(t *testing.T) {
	ctx := context.Background()
	owner := newOwner()
	require.NoError(t, ownerref.RecheckOwner(owner, fixed(newOwner(), nil))(ctx))

	err := ownerref.RecheckOwner(owner, fixed(newOwner(func(rs *appsv1.ReplicaSet) { rs.UID = "new-uid" }), nil))(ctx)
	require.ErrorIs(t, err, ownerref.ErrOwnerReplaced)
	assert.EqualError(t, err, "owner was replaced: default/web now has uid new-uid, expected rs-uid")

	err = ownerref.RecheckOwner(owner, fixed(newOwner(deleting), nil))(ctx)
	require.ErrorIs(t, err, ownerref.ErrOwnerBeingDeleted)

	err = ownerref.RecheckOwner(nil, fixed(newOwner(), nil))(ctx)
	require.ErrorIs(t, err, ownerref.ErrInvalidClaimer)

	// An owner without a UID would pass against any fresh copy without one (a re-created
	// owner included); it is refused before the GET.
	noUID := func(rs *appsv1.ReplicaSet) { rs.UID = "" }
	gets := 0
	err = ownerref.RecheckOwner(newOwner(noUID), func(context.Context) (metav1.Object, error) {
		gets++
		return newOwner(noUID), nil
	})(ctx)
	require.ErrorIs(t, err, ownerref.ErrInvalidClaimer)
	require.ErrorIs(t, err, ownerref.ErrMissingUID)
	assert.EqualError(t, err, "invalid claimer: RecheckOwner was given owner default/web: missing uid")
	assert.Zero(t, gets)
}

// TestGetFresh: the adapter reads through the clientset (one GET action per call) and passes
// NotFound through, so a deleted owner refuses adoption with a matchable error.
func TestGetFresh(t *testing.T) {
	ctx := context.Background()
	owner := newOwner()
	client := fake.NewClientset(owner)
	get := ownerref.GetFresh(client.AppsV1().ReplicaSets("default").Get, "web")
	obj, err := get(ctx)
	require.NoError(t, err)
	assert.Equal(t, owner.UID, obj.GetUID())
	assert.Equal(t, 1, countActions(client, "get", "replicasets"))

	err = ownerref.RecheckOwner(owner, ownerref.GetFresh(client.AppsV1().ReplicaSets("default").Get, "gone"))(ctx)
	assert.True(t, apierrors.IsNotFound(err), "%v", err)

	_, err = ownerref.GetFresh[*appsv1.ReplicaSet](nil, "web")(ctx)
	assert.ErrorIs(t, err, ownerref.ErrInvalidClaimer)
}
