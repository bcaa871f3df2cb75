package ownerref_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/ownerref"
)

// Owner references as the tests below write them.
var (
	webRef     = metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-1"}
	webCtrlRef = metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-1",
		Controller: new(true), BlockOwnerDeletion: new(true)}
	dbCtrlRef = metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "db", UID: "rs-2",
		Controller: new(true), BlockOwnerDeletion: new(true)}
	plainCMRef = metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "web", UID: "cm-1"}
)

func podWith(refs ...metav1.OwnerReference) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0", OwnerReferences: refs}}
}

// controller-runtime's SetOwnerReference semantics: a plain reference, added after the others
// or put in place of one to the same group, kind and name.
func TestSetOwnerReference(t *testing.T) {
	rs := replicaSet("default", "web", "rs-1")
	cases := []struct {
		name string
		have []metav1.OwnerReference
		opts []ownerref.Option
		want []metav1.OwnerReference
	}{
		{"on none", nil, nil, []metav1.OwnerReference{webRef}},
		{"after the others", []metav1.OwnerReference{plainCMRef}, nil, []metav1.OwnerReference{plainCMRef, webRef}},
		{"the same again: nothing changes", []metav1.OwnerReference{plainCMRef, webRef}, nil, []metav1.OwnerReference{plainCMRef, webRef}},
		{"block owner deletion", nil, []ownerref.Option{ownerref.WithBlockOwnerDeletion(true)},
			[]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-1", BlockOwnerDeletion: new(true)}}},
		{"block owner deletion false is written", nil, []ownerref.Option{ownerref.WithBlockOwnerDeletion(false)},
			[]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-1", BlockOwnerDeletion: new(false)}}},
		{"replaces a reference at another version, in place",
			[]metav1.OwnerReference{{APIVersion: "apps/v1beta2", Kind: "ReplicaSet", Name: "web", UID: "rs-1"}, plainCMRef}, nil,
			[]metav1.OwnerReference{webRef, plainCMRef}},
		{"replaces a reference to a former owner of the name (another uid)",
			[]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-0"}}, nil,
			[]metav1.OwnerReference{webRef}},
		{"a controller reference to the same owner becomes plain", []metav1.OwnerReference{webCtrlRef}, nil,
			[]metav1.OwnerReference{webRef}},
		{"another owner's controller reference stays", []metav1.OwnerReference{dbCtrlRef}, nil,
			[]metav1.OwnerReference{dbCtrlRef, webRef}},
		{"an owner of another kind with the same name stays", []metav1.OwnerReference{plainCMRef}, nil,
			[]metav1.OwnerReference{plainCMRef, webRef}},
		{"duplicates of the same owner collapse into one",
			[]metav1.OwnerReference{webRef, plainCMRef, {APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-0"}}, nil,
			[]metav1.OwnerReference{webRef, plainCMRef}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := podWith(tc.have...)
			require.NoError(t, ownerref.SetOwnerReference(rs, pod, tc.opts...))
			assert.Equal(t, tc.want, pod.OwnerReferences)
		})
	}
}

func TestSetOwnerReferenceRefusesInvalidOwners(t *testing.T) {
	cluster := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "ns-1"}}
	cases := []struct {
		name  string
		owner metav1.Object
		obj   metav1.Object
		want  error
	}{
		{"nil owner", nil, podWith(), ownerref.ErrNilObject},
		{"nil object", replicaSet("default", "web", "rs-1"), (*corev1.Pod)(nil), ownerref.ErrNilObject},
		{"owner without uid", replicaSet("default", "web", ""), podWith(), ownerref.ErrMissingUID},
		{"owner without name", replicaSet("default", "", "rs-1"), podWith(), ownerref.ErrInvalidOwner},
		{"owner in another namespace", replicaSet("other", "web", "rs-1"), podWith(), ownerref.ErrInvalidOwner},
		{"namespaced owner of a cluster-scoped object", replicaSet("default", "web", "rs-1"), cluster, ownerref.ErrInvalidOwner},
		{"owner of unknown kind", &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "x-1"}},
			podWith(), ownerref.ErrUnknownKind},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var before []metav1.OwnerReference
			if pod, ok := tc.obj.(*corev1.Pod); ok && pod != nil {
				before = pod.DeepCopy().OwnerReferences
			}
			err := ownerref.SetOwnerReference(tc.owner, tc.obj)
			require.ErrorIs(t, err, tc.want)
			if pod, ok := tc.obj.(*corev1.Pod); ok && pod != nil {
				assert.Equal(t, before, pod.OwnerReferences, "obj unchanged")
				assert.Contains(t, err.Error(), "default/web-0", "the error names the object")
			}
		})
	}
	// A cluster-scoped owner may own a namespaced object.
	pod := podWith()
	require.NoError(t, ownerref.SetOwnerReference(cluster, pod))
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "v1", Kind: "Namespace", Name: "default", UID: "ns-1"}}, pod.OwnerReferences)
}

func TestRemoveOwnerReference(t *testing.T) {
	rs := replicaSet("default", "web", "rs-1")
	cases := []struct {
		name    string
		have    []metav1.OwnerReference
		want    []metav1.OwnerReference
		wantErr error
	}{
		{"the plain reference", []metav1.OwnerReference{plainCMRef, webRef}, []metav1.OwnerReference{plainCMRef}, nil},
		{"the controller reference", []metav1.OwnerReference{webCtrlRef, plainCMRef}, []metav1.OwnerReference{plainCMRef}, nil},
		{"at another version and uid", []metav1.OwnerReference{{APIVersion: "apps/v1beta2", Kind: "ReplicaSet", Name: "web", UID: "rs-0"}},
			[]metav1.OwnerReference{}, nil},
		{"every duplicate", []metav1.OwnerReference{webRef, plainCMRef, webCtrlRef}, []metav1.OwnerReference{plainCMRef}, nil},
		{"none to this owner", []metav1.OwnerReference{plainCMRef, dbCtrlRef}, []metav1.OwnerReference{plainCMRef, dbCtrlRef}, ownerref.ErrNotOwned},
		{"no references at all", nil, nil, ownerref.ErrNotOwned},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := podWith(tc.have...)
			err := ownerref.RemoveOwnerReference(rs, pod)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				assert.Equal(t, "remove owner reference of default/web-0 to ReplicaSet default/web: object has no such owner reference", err.Error())
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.want, pod.OwnerReferences)
		})
	}
}

func TestRemoveControllerReference(t *testing.T) {
	rs := replicaSet("default", "web", "rs-1")
	cases := []struct {
		name    string
		have    []metav1.OwnerReference
		want    []metav1.OwnerReference
		wantErr string
	}{
		{"the controller reference", []metav1.OwnerReference{plainCMRef, webCtrlRef}, []metav1.OwnerReference{plainCMRef}, ""},
		{"a plain reference to owner stays", []metav1.OwnerReference{webCtrlRef, webRef}, []metav1.OwnerReference{webRef}, ""},
		{"no controller reference, only a plain one to owner", []metav1.OwnerReference{webRef}, []metav1.OwnerReference{webRef},
			"remove controller reference of default/web-0 to ReplicaSet default/web: default/web-0 has no controller reference: object has no such owner reference"},
		{"controlled by another owner", []metav1.OwnerReference{dbCtrlRef, webRef}, []metav1.OwnerReference{dbCtrlRef, webRef},
			"remove controller reference of default/web-0 to ReplicaSet default/web: default/web-0 is controlled by ReplicaSet db (uid rs-2): object has no such owner reference"},
		{"no references at all", nil, nil,
			"remove controller reference of default/web-0 to ReplicaSet default/web: default/web-0 has no controller reference: object has no such owner reference"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := podWith(tc.have...)
			err := ownerref.RemoveControllerReference(rs, pod)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, ownerref.ErrNotOwned)
				assert.Equal(t, tc.wantErr, err.Error())
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.want, pod.OwnerReferences)
		})
	}
}

func TestHasOwnerReferenceAndHasControllerReference(t *testing.T) {
	rs := replicaSet("default", "web", "rs-1")
	cases := []struct {
		name          string
		have          []metav1.OwnerReference
		has, hasCtrl  bool
		controlledByW bool
	}{
		{"none", nil, false, false, false},
		{"plain", []metav1.OwnerReference{webRef}, true, false, false},
		{"controller", []metav1.OwnerReference{webCtrlRef}, true, true, true},
		{"another owner's controller", []metav1.OwnerReference{dbCtrlRef}, false, true, false},
		{"another kind, same name", []metav1.OwnerReference{plainCMRef}, false, false, false},
		{"another version and uid: same owner by name, not by uid",
			[]metav1.OwnerReference{{APIVersion: "apps/v1beta2", Kind: "ReplicaSet", Name: "web", UID: "rs-0", Controller: new(true)}},
			true, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := podWith(tc.have...)
			has, err := ownerref.HasOwnerReference(pod, rs)
			require.NoError(t, err)
			assert.Equal(t, tc.has, has, "HasOwnerReference")
			assert.Equal(t, tc.hasCtrl, ownerref.HasControllerReference(pod), "HasControllerReference")
			assert.Equal(t, tc.controlledByW, ownerref.IsControlledBy(pod, rs), "IsControlledBy")
		})
	}
	assert.False(t, ownerref.HasControllerReference(nil))
	assert.False(t, ownerref.HasControllerReference((*corev1.Pod)(nil)))
	_, err := ownerref.HasOwnerReference(nil, rs)
	assert.ErrorIs(t, err, ownerref.ErrNilObject)
	_, err = ownerref.HasOwnerReference(podWith(), &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x"}})
	assert.ErrorIs(t, err, ownerref.ErrUnknownKind)
}

// The functions round-trip as controller-runtime's tests use them: a reference set by one is
// found, and removed, by the others.
func TestOwnerReferenceRoundTrips(t *testing.T) {
	rs, other := replicaSet("default", "web", "rs-1"), replicaSet("default", "db", "rs-2")
	pod := podWith()
	require.NoError(t, ownerref.SetOwnerReference(rs, pod))
	assert.False(t, ownerref.HasControllerReference(pod), "SetOwnerReference sets no controller")
	require.ErrorIs(t, ownerref.RemoveControllerReference(rs, pod), ownerref.ErrNotOwned)

	require.NoError(t, ownerref.SetControllerReference(other, pod))
	require.ErrorIs(t, ownerref.RemoveControllerReference(rs, pod), ownerref.ErrNotOwned, "rs is an owner, not the controller")
	require.Len(t, pod.OwnerReferences, 2)
	require.NoError(t, ownerref.RemoveControllerReference(other, pod))
	assert.Equal(t, []metav1.OwnerReference{webRef}, pod.OwnerReferences)
	require.NoError(t, ownerref.RemoveOwnerReference(rs, pod))
	assert.Empty(t, pod.OwnerReferences)
}

func TestWithBlockOwnerDeletionOnSetControllerReference(t *testing.T) {
	pod := podWith()
	require.NoError(t, ownerref.SetControllerReference(replicaSet("default", "web", "rs-1"), pod, ownerref.WithBlockOwnerDeletion(false)))
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-1",
		Controller: new(true), BlockOwnerDeletion: new(false)}}, pod.OwnerReferences)

	// Without the option the default stays true.
	pod = podWith()
	require.NoError(t, ownerref.SetControllerReference(replicaSet("default", "web", "rs-1"), pod))
	assert.Equal(t, []metav1.OwnerReference{webCtrlRef}, pod.OwnerReferences)
}

// widget is an owner type no scheme but the test's own knows.
type widget struct {
	metav1.TypeMeta
	metav1.ObjectMeta
}

func (w *widget) DeepCopyObject() runtime.Object { c := *w; return &c }

func TestWithScheme(t *testing.T) {
	gv := schema.GroupVersion{Group: "example.com", Version: "v1"}
	s := runtime.NewScheme()
	s.AddKnownTypeWithName(gv.WithKind("Widget"), &widget{})
	w := &widget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "w", UID: "w-1"}}

	pod := podWith()
	require.ErrorIs(t, ownerref.SetOwnerReference(w, pod), ownerref.ErrUnknownKind, "not in client-go's scheme")
	require.NoError(t, ownerref.SetOwnerReference(w, pod, ownerref.WithScheme(s)))
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Widget", Name: "w", UID: "w-1"}}, pod.OwnerReferences)
	has, err := ownerref.HasOwnerReference(pod, w, ownerref.WithScheme(s))
	require.NoError(t, err)
	assert.True(t, has)
	require.NoError(t, ownerref.RemoveOwnerReference(w, pod, ownerref.WithScheme(s)))
	assert.Empty(t, pod.OwnerReferences)

	// A nil scheme is ignored, and WithKind still comes first.
	require.NoError(t, ownerref.SetControllerReference(w, pod, ownerref.WithScheme(nil), ownerref.WithKind(gv.WithKind("Gadget"))))
	assert.Equal(t, "Gadget", pod.OwnerReferences[0].Kind)
}
