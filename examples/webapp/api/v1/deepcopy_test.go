package v1

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/randfill"
)

func filledWebApp(seed int64) *WebApp {
	w := &WebApp{}
	randfill.NewWithSeed(seed).NilChance(0).NumElements(1, 2).Fill(w)
	return w
}

// The generated DeepCopy shares nothing: changing the copy behind every pointer, slice and
// map of this package's types leaves the original as it was.
func TestDeepCopy(t *testing.T) {
	for seed := range int64(20) {
		in := filledWebApp(seed)
		out := in.DeepCopy()
		require.Equal(t, in, out)
		*out.Spec.Replicas++
		out.Status.Conditions[0].Reason = "Changed"
		out.Labels["x"] = "y"
		require.Equal(t, filledWebApp(seed), in, "seed %d: the copy shares memory", seed)

		list := &WebAppList{Items: []WebApp{*filledWebApp(seed)}}
		lc := list.DeepCopyObject().(*WebAppList)
		*lc.Items[0].Spec.Replicas++
		require.Equal(t, &WebAppList{Items: []WebApp{*filledWebApp(seed)}}, list)
	}
	var nilApp *WebApp
	require.True(t, nilApp.DeepCopyObject() == nil)
	var _ runtime.Object = &WebApp{}
	var _ metav1.Object = &WebApp{}
}
