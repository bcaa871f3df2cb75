package finalizer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ctrlkit/ctrlkit/finalizer"
)

func withFinalizers(names ...string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Finalizers: names}}
}

// The table is controller-runtime's AddFinalizer / RemoveFinalizer / ContainsFinalizer
// semantics, name validation excluded as theirs exclude it.
func TestInMemoryFinalizers(t *testing.T) {
	cases := []struct {
		name        string
		have        []string
		op          func(metav1.Object, string) bool
		arg         string
		wantChanged bool
		want        []string
	}{
		{"add to none", nil, finalizer.AddToObject, "example.com/a", true, []string{"example.com/a"}},
		{"add after the others", []string{"x/1", "x/2"}, finalizer.AddToObject, "x/3", true, []string{"x/1", "x/2", "x/3"}},
		{"add present", []string{"x/1", "x/2"}, finalizer.AddToObject, "x/1", false, []string{"x/1", "x/2"}},
		{"add a name without a domain prefix: not validated", nil, finalizer.AddToObject, "cleanup", true, []string{"cleanup"}},
		{"add an empty name: not validated", nil, finalizer.AddToObject, "", true, []string{""}},
		{"remove the only one", []string{"x/1"}, finalizer.RemoveFromObject, "x/1", true, []string{}},
		{"remove keeps the order of the rest", []string{"x/1", "x/2", "x/3"}, finalizer.RemoveFromObject, "x/2", true, []string{"x/1", "x/3"}},
		{"remove every occurrence", []string{"x/1", "x/2", "x/1"}, finalizer.RemoveFromObject, "x/1", true, []string{"x/2"}},
		{"remove absent", []string{"x/1"}, finalizer.RemoveFromObject, "x/2", false, []string{"x/1"}},
		{"remove from none", nil, finalizer.RemoveFromObject, "x/1", false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := withFinalizers(tc.have...)
			assert.Equal(t, tc.wantChanged, tc.op(obj, tc.arg))
			assert.Equal(t, tc.want, obj.Finalizers)
		})
	}
}

func TestHasMatchesContainsFinalizer(t *testing.T) {
	cases := []struct {
		name string
		obj  metav1.Object
		arg  string
		want bool
	}{
		{"present", withFinalizers("x/1", "x/2"), "x/2", true},
		{"absent", withFinalizers("x/1"), "x/2", false},
		{"none", withFinalizers(), "x/1", false},
		{"a name without a domain prefix is not validated", withFinalizers("cleanup"), "cleanup", true},
		{"nil interface", nil, "x/1", false},
		{"typed nil", (*corev1.ConfigMap)(nil), "x/1", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, finalizer.Has(tc.obj, tc.arg))
		})
	}
}

// A nil object is refused quietly, not with a panic (controller-runtime's would panic).
func TestInMemoryFinalizersOnNil(t *testing.T) {
	assert.False(t, finalizer.AddToObject(nil, "x/1"))
	assert.False(t, finalizer.AddToObject((*corev1.ConfigMap)(nil), "x/1"))
	assert.False(t, finalizer.RemoveFromObject(nil, "x/1"))
	assert.False(t, finalizer.RemoveFromObject((*unstructured.Unstructured)(nil), "x/1"))
}

// A shallow copy of a cached object shares its finalizer slice; adding to or removing from the
// copy must not change the cached object through that slice.
func TestInMemoryFinalizersDoNotWriteTheSharedSlice(t *testing.T) {
	cached := withFinalizers("x/1", "x/2", "x/3")
	cached.Finalizers = cached.Finalizers[:2:3] // spare capacity an append would write into
	backing := cached.Finalizers[:3]

	cp := *cached
	assert.True(t, finalizer.AddToObject(&cp, "x/9"))
	assert.Equal(t, []string{"x/1", "x/2", "x/3"}, backing, "append did not write into the shared array")

	cp = *cached
	assert.True(t, finalizer.RemoveFromObject(&cp, "x/1"))
	assert.Equal(t, []string{"x/1", "x/2"}, cached.Finalizers, "the cached object keeps its list")
	assert.Equal(t, []string{"x/2"}, cp.Finalizers)
}

// Unstructured objects (custom resources, the dynamic client) work the same.
func TestInMemoryFinalizersOnUnstructured(t *testing.T) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Widget")
	u.SetName("w")
	assert.True(t, finalizer.AddToObject(u, "example.com/a"))
	assert.True(t, finalizer.Has(u, "example.com/a"))
	assert.Equal(t, []string{"example.com/a"}, u.GetFinalizers())
	assert.True(t, finalizer.RemoveFromObject(u, "example.com/a"))
	assert.False(t, finalizer.Has(u, "example.com/a"))
	assert.Empty(t, u.GetFinalizers())
}
