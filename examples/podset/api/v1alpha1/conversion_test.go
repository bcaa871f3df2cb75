package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/randfill"

	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1beta1"
)

// sparseFiller leaves some pointers, slices and maps nil, so that nil and set both cross the
// conversion.
func sparseFiller(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.3).NumElements(1, 2).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(c.Int63n(1000), resource.DecimalSI)
		},
	)
}

// Every field of v1alpha1 survives v1alpha1 → v1beta1 → v1alpha1, and every field of
// v1beta1 survives v1beta1 → v1alpha1 → v1beta1, for random objects.
func TestConversionRoundTripsAreLossless(t *testing.T) {
	sawNil, sawSet := false, false
	for seed := range int64(300) {
		in := &PodSet{}
		sparseFiller(seed).Fill(in)
		in.TypeMeta = metav1.TypeMeta{}
		orig := in.DeepCopy()
		hub := &v1beta1.PodSet{}
		require.NoError(t, in.ConvertTo(hub))
		out := &PodSet{}
		require.NoError(t, out.ConvertFrom(hub))
		require.Equal(t, orig, out, "seed %d", seed)
		require.Equal(t, orig, in, "seed %d: ConvertTo changed its source", seed)
		if in.Spec.Replicas == nil {
			sawNil = true
			require.Nil(t, hub.Spec.Scale)
		} else {
			sawSet = true
			require.Equal(t, *in.Spec.Replicas, hub.Spec.Scale.Replicas)
		}

		h := &v1beta1.PodSet{}
		sparseFiller(seed + 1000).Fill(h)
		h.TypeMeta = metav1.TypeMeta{}
		hubOrig := h.DeepCopy()
		spoke := &PodSet{}
		require.NoError(t, spoke.ConvertFrom(h))
		back := &v1beta1.PodSet{}
		require.NoError(t, spoke.ConvertTo(back))
		require.Equal(t, hubOrig, back, "seed %d", seed)
		require.Equal(t, hubOrig, h, "seed %d: ConvertFrom changed its source", seed)
	}
	require.True(t, sawNil && sawSet, "the random objects must cover both an unset and a set spec.replicas")
}

// The converted object shares no memory with its source: changing one leaves the other.
func TestConversionSharesNothing(t *testing.T) {
	in := filledPodSet(5)
	hub := &v1beta1.PodSet{}
	require.NoError(t, in.ConvertTo(hub))
	hub.Labels["x"] = "y"
	hub.Spec.Selector.MatchLabels["x"] = "y"
	hub.Spec.Template.Labels["x"] = "y"
	hub.Status.Conditions[0].Reason = "changed"
	hub.Spec.Scale.Replicas++
	require.Equal(t, filledPodSet(5), in)
}
