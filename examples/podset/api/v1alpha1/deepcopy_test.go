package v1alpha1

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/randfill"
)

// filler fills every field (NilChance 0: every pointer, slice and map is set), so the
// aliasing walk below has something to check everywhere. A fixed seed gives the same
// object twice, which is how the tests keep an untouched reference.
func filler(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0).NumElements(1, 2).Funcs(
		// Quantity's fields are unexported; randfill would leave a broken zero value.
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(c.Int63n(1000), resource.DecimalSI)
		},
	)
}

func filledPodSet(seed int64) *PodSet {
	ps := &PodSet{}
	filler(seed).Fill(ps)
	return ps
}

func TestDeepCopyEqualsAndSharesNothing(t *testing.T) {
	for seed := range int64(20) {
		in := filledPodSet(seed)
		out := in.DeepCopy()
		require.Equal(t, in, out, "seed %d", seed)
		assertNoSharedMemory(t, "PodSet", reflect.ValueOf(in), reflect.ValueOf(out))

		list := &PodSetList{Items: []PodSet{*filledPodSet(seed), *filledPodSet(seed + 100)}}
		filler(seed).Fill(&list.ListMeta)
		listCopy := list.DeepCopy()
		require.Equal(t, list, listCopy)
		assertNoSharedMemory(t, "PodSetList", reflect.ValueOf(list), reflect.ValueOf(listCopy))
	}
}

// TestDeepCopyMutatingTheCopyLeavesTheOriginal changes, through the copy, one field behind
// every pointer, map and slice of the types in this package, then compares the original
// with an identical, never-copied object.
func TestDeepCopyMutatingTheCopyLeavesTheOriginal(t *testing.T) {
	const seed = 7
	orig := filledPodSet(seed)
	cp := orig.DeepCopy()

	*cp.Spec.Replicas += 5
	cp.Spec.Selector.MatchLabels["mutated"] = "yes"
	cp.Spec.Selector.MatchExpressions[0].Values[0] = "mutated"
	cp.Spec.Template.Labels["mutated"] = "yes"
	cp.Spec.Template.Spec.Containers[0].Name = "mutated"
	cp.Spec.Template.Spec.Containers[0].Env = append(cp.Spec.Template.Spec.Containers[0].Env[:0], cp.Spec.Template.Spec.Containers[0].Env[0])
	cp.Spec.Template.Spec.Containers[0].Env[0].Name = "MUTATED"
	cp.Status.Conditions[0].Reason = "Mutated"
	cp.Status.Conditions = append(cp.Status.Conditions[:1], metav1.Condition{Type: "Extra"})
	cp.Labels["mutated"] = "yes"
	cp.OwnerReferences[0].Controller = new(bool)
	cp.Finalizers[0] = "mutated"

	require.Equal(t, filledPodSet(seed), orig)
	require.NotEqual(t, orig, cp)

	list := &PodSetList{Items: []PodSet{*filledPodSet(seed)}}
	listCopy := list.DeepCopy()
	listCopy.Items[0].Spec.Selector.MatchLabels["mutated"] = "yes"
	listCopy.Items[0].Name = "mutated"
	require.Equal(t, &PodSetList{Items: []PodSet{*filledPodSet(seed)}}, list)
}

func TestDeepCopyObject(t *testing.T) {
	in := filledPodSet(3)
	obj := in.DeepCopyObject()
	require.IsType(t, &PodSet{}, obj)
	require.Equal(t, in, obj)
	require.NotSame(t, in, obj)

	list := &PodSetList{Items: []PodSet{*in}}
	require.Equal(t, list, list.DeepCopyObject())

	// Typed nils become untyped nil interfaces, as deepcopy-gen's code does, so callers
	// can test the result against nil.
	var nilPS *PodSet
	require.Nil(t, nilPS.DeepCopy())
	require.True(t, nilPS.DeepCopyObject() == nil)
	var nilList *PodSetList
	require.True(t, nilList.DeepCopyObject() == nil)
	var nilSpec *PodSetSpec
	require.Nil(t, nilSpec.DeepCopy())
	var nilStatus *PodSetStatus
	require.Nil(t, nilStatus.DeepCopy())

	// The zero value copies to the zero value: nil stays nil, not empty.
	require.Equal(t, &PodSet{}, (&PodSet{}).DeepCopy())
	require.Nil(t, (&PodSetStatus{}).DeepCopy().Conditions)

	var _ runtime.Object = &PodSet{}
	var _ runtime.Object = &PodSetList{}
	var _ metav1.Object = &PodSet{}
}

// assertNoSharedMemory walks a and b (deep-equal values) in parallel and fails where both
// hold the same pointer, map or slice backing array: such memory would be shared between
// an object and its copy. Strings and time.Time (whose *Location is immutable) may be
// shared.
func assertNoSharedMemory(t *testing.T, path string, a, b reflect.Value) {
	t.Helper()
	if a.Type() == reflect.TypeFor[time.Time]() {
		return
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("%s: copy shares pointer %#x", path, a.Pointer())
			return
		}
		assertNoSharedMemory(t, path, a.Elem(), b.Elem())
	case reflect.Map:
		if a.IsNil() || b.IsNil() {
			return
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("%s: copy shares map", path)
			return
		}
		for _, k := range a.MapKeys() {
			assertNoSharedMemory(t, path+"["+k.String()+"]", a.MapIndex(k), b.MapIndex(k))
		}
	case reflect.Slice:
		if a.Len() == 0 || b.Len() == 0 {
			return
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("%s: copy shares slice backing array", path)
			return
		}
		for i := range a.Len() {
			assertNoSharedMemory(t, path+"[]", a.Index(i), b.Index(i))
		}
	case reflect.Struct:
		for i := range a.NumField() {
			assertNoSharedMemory(t, path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i))
		}
	case reflect.Interface:
		if !a.IsNil() && !b.IsNil() {
			assertNoSharedMemory(t, path, a.Elem(), b.Elem())
		}
	}
}
