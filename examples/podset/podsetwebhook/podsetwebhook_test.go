package podsetwebhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"

	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1beta1"
	"github.com/ctrlkit/ctrlkit/examples/podset/podsetwebhook"
	"github.com/ctrlkit/ctrlkit/webhook"
)

func podSet(replicas *int32, selector map[string]string, templateLabels map[string]string) *v1alpha1.PodSet {
	ps := &v1alpha1.PodSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: v1alpha1.PodSetSpec{
			Replicas: replicas,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: templateLabels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}
	if selector != nil {
		ps.Spec.Selector = &metav1.LabelSelector{MatchLabels: selector}
	}
	return ps
}

func review(t *testing.T, op admissionv1.Operation, obj, old *v1alpha1.PodSet) *admissionv1.AdmissionRequest {
	t.Helper()
	raw := func(ps *v1alpha1.PodSet) runtime.RawExtension {
		if ps == nil {
			return runtime.RawExtension{}
		}
		b, err := json.Marshal(ps)
		require.NoError(t, err)
		return runtime.RawExtension{Raw: b}
	}
	return &admissionv1.AdmissionRequest{
		UID: "1", Operation: op, Name: "web", Namespace: "default",
		Kind:   metav1.GroupVersionKind{Group: v1alpha1.GroupName, Version: v1alpha1.Version, Kind: v1alpha1.Kind},
		Object: raw(obj), OldObject: raw(old),
	}
}

func TestDefaulting(t *testing.T) {
	h, err := webhook.NewDefaulting[*v1alpha1.PodSet](v1alpha1.GVK, podsetwebhook.Webhook{})
	require.NoError(t, err)
	in := podSet(nil, nil, map[string]string{"app": "web"})
	req := review(t, admissionv1.Create, in, nil)
	resp := h.Handle(context.Background(), req)
	require.True(t, resp.Allowed)
	p, err := jsonpatch.DecodePatch(resp.Patch)
	require.NoError(t, err)
	out, err := p.Apply(req.Object.Raw)
	require.NoError(t, err)
	var got v1alpha1.PodSet
	require.NoError(t, json.Unmarshal(out, &got))
	assert.Equal(t, ptr.To[int32](1), got.Spec.Replicas)
	assert.Equal(t, &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, got.Spec.Selector)
	assert.Equal(t, map[string]string{podsetwebhook.ManagedByLabel: podsetwebhook.ManagedBy}, got.Labels)

	// What is set stays.
	in = podSet(ptr.To[int32](3), map[string]string{"app": "web"}, map[string]string{"app": "web", "tier": "front"})
	in.Labels = map[string]string{podsetwebhook.ManagedByLabel: "me"}
	resp = h.Handle(context.Background(), review(t, admissionv1.Create, in, nil))
	require.True(t, resp.Allowed)
	assert.Empty(t, resp.Patch)
}

func TestValidation(t *testing.T) {
	h, err := webhook.NewValidating[*v1alpha1.PodSet](v1alpha1.GVK, podsetwebhook.Webhook{})
	require.NoError(t, err)
	web := map[string]string{"app": "web"}
	for _, tc := range []struct {
		name    string
		ps      *v1alpha1.PodSet
		message string
	}{
		{"valid", podSet(ptr.To[int32](2), web, web), ""},
		{"negative replicas", podSet(ptr.To[int32](-1), web, web),
			`PodSet.examples.ctrlkit.dev "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0`},
		{"no selector", podSet(nil, nil, web),
			`PodSet.examples.ctrlkit.dev "web" is invalid: spec.selector: Required value: an empty selector would match every Pod of the namespace`},
		{"selector does not match", podSet(nil, map[string]string{"app": "db"}, web),
			`PodSet.examples.ctrlkit.dev "web" is invalid: spec.template.metadata.labels: Invalid value: {"app":"web"}: selector "app=db" does not match the template's labels`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.Handle(context.Background(), review(t, admissionv1.Create, tc.ps, nil))
			if tc.message == "" {
				assert.True(t, resp.Allowed)
				return
			}
			require.False(t, resp.Allowed)
			assert.Equal(t, metav1.StatusReasonInvalid, resp.Result.Reason)
			assert.Equal(t, tc.message, resp.Result.Message)
		})
	}

	old := podSet(ptr.To[int32](1), web, web)
	changed := podSet(ptr.To[int32](1), map[string]string{"app": "web", "v": "2"}, map[string]string{"app": "web", "v": "2"})
	resp := h.Handle(context.Background(), review(t, admissionv1.Update, changed, old))
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, "spec.selector: Invalid value")
	assert.Contains(t, resp.Result.Message, "field is immutable")

	scaled := podSet(ptr.To[int32](0), web, web)
	resp = h.Handle(context.Background(), review(t, admissionv1.Update, scaled, old))
	require.True(t, resp.Allowed)
	assert.Equal(t, []string{"spec.replicas is 0: the PodSet runs no Pods"}, resp.Warnings)

	resp = h.Handle(context.Background(), review(t, admissionv1.Delete, nil, old))
	assert.True(t, resp.Allowed)
}

// Random v1alpha1 PodSets cross the conversion handler as JSON, to v1beta1 and back, and come
// out equal; so do random v1beta1 PodSets the other way round.
func TestConversionJSONRoundTrip(t *testing.T) {
	c, err := podsetwebhook.NewConversion()
	require.NoError(t, err)
	for seed := range int64(200) {
		in := &v1alpha1.PodSet{}
		jsonFiller(seed).Fill(in)
		in.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.Kind}
		raw, err := json.Marshal(in)
		require.NoError(t, err)
		beta, err := c.Convert(raw, v1beta1.GroupVersion.String())
		require.NoError(t, err, "seed %d", seed)
		var hub v1beta1.PodSet
		require.NoError(t, json.Unmarshal(beta, &hub))
		require.Equal(t, v1beta1.GroupVersion.String(), hub.APIVersion)
		if in.Spec.Replicas != nil {
			require.Equal(t, *in.Spec.Replicas, hub.Spec.Scale.Replicas)
		}
		back, err := c.Convert(beta, v1alpha1.GroupVersion.String())
		require.NoError(t, err)
		var out v1alpha1.PodSet
		require.NoError(t, json.Unmarshal(back, &out))
		var want v1alpha1.PodSet
		require.NoError(t, json.Unmarshal(raw, &want)) // what JSON can carry of in
		require.Equal(t, want, out, "seed %d", seed)

		h := &v1beta1.PodSet{}
		jsonFiller(seed + 1000).Fill(h)
		h.TypeMeta = metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: v1beta1.Kind}
		raw, err = json.Marshal(h)
		require.NoError(t, err)
		alpha, err := c.Convert(raw, v1alpha1.GroupVersion.String())
		require.NoError(t, err)
		beta, err = c.Convert(alpha, v1beta1.GroupVersion.String())
		require.NoError(t, err)
		require.JSONEq(t, string(raw), string(beta), "seed %d", seed)
	}
}

// jsonFiller makes random objects whose every value survives JSON: times in whole seconds,
// quantities in canonical form, managed fields that are JSON.
func jsonFiller(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.3).NumElements(1, 2).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(c.Int63n(1000), resource.DecimalSI)
		},
		func(tm *metav1.Time, c randfill.Continue) {
			*tm = metav1.Unix(c.Int63n(1<<31), 0)
		},
		func(f *metav1.FieldsV1, c randfill.Continue) {
			f.Raw = fmt.Appendf(nil, `{"f:spec":{"f:n%d":{}}}`, c.Intn(10))
		},
	)
}
