package v1beta1

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/randfill"
)

func filledPodSet(seed int64) *PodSet {
	ps := &PodSet{}
	randfill.NewWithSeed(seed).NilChance(0).NumElements(1, 2).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(c.Int63n(1000), resource.DecimalSI)
		},
	).Fill(ps)
	return ps
}

func TestDeepCopy(t *testing.T) {
	for seed := range int64(20) {
		in := filledPodSet(seed)
		out := in.DeepCopy()
		require.Equal(t, in, out)
		out.Spec.Scale.Replicas++
		out.Spec.Selector.MatchLabels["x"] = "y"
		out.Spec.Template.Labels["x"] = "y"
		out.Status.Conditions[0].Reason = "changed"
		out.Labels["x"] = "y"
		require.Equal(t, filledPodSet(seed), in, "seed %d: the copy shares memory", seed)

		list := &PodSetList{Items: []PodSet{*filledPodSet(seed)}}
		lc := list.DeepCopyObject().(*PodSetList)
		lc.Items[0].Spec.Scale.Replicas++
		require.Equal(t, &PodSetList{Items: []PodSet{*filledPodSet(seed)}}, list)
	}
	var nilPS *PodSet
	require.True(t, nilPS.DeepCopyObject() == nil)
	require.Equal(t, int32(1), (&PodSetSpec{}).DesiredReplicas())
}
