package customresource_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
)

// checkConversion is the property both the table and the fuzz target check: converting
// any map never panics; it either yields a T that converts back, or a
// *ConversionError for this resource.
func checkConversion(t *testing.T, c *customresource.Client[*v1alpha1.PodSet], obj map[string]any) {
	t.Helper()
	ps, err := c.FromUnstructured(&unstructured.Unstructured{Object: obj})
	if err != nil {
		var convErr *customresource.ConversionError
		require.ErrorAs(t, err, &convErr)
		require.Equal(t, v1alpha1.GVR, convErr.Resource)
		require.False(t, convErr.ToUnstructured)
		require.NotEmpty(t, err.Error())
		require.Nil(t, ps)
		return
	}
	require.NotNil(t, ps)
	_, err = c.ToUnstructured(ps)
	require.NoError(t, err)
}

func TestFromUnstructuredMalformedInputNeverPanics(t *testing.T) {
	c := newClient(t, newFake(t))
	type weird struct{ A int }
	cases := map[string]struct {
		obj     map[string]any
		wantErr bool
	}{
		"empty":                {obj: map[string]any{}},
		"metadata is a string": {obj: map[string]any{"metadata": "x"}, wantErr: true},
		"name is a number":     {obj: map[string]any{"metadata": map[string]any{"name": int64(3)}}, wantErr: true},
		"labels are a list":    {obj: map[string]any{"metadata": map[string]any{"labels": []any{"a"}}}, wantErr: true},
		"label value is a map": {obj: map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": map[string]any{}}}}, wantErr: true},
		"spec is a list":       {obj: map[string]any{"spec": []any{int64(1)}}, wantErr: true},
		"replicas is a string": {obj: map[string]any{"spec": map[string]any{"replicas": "three"}}, wantErr: true},
		// The converter wraps out-of-range integers, as client-go's does everywhere; the
		// CRD's format: int32 makes the API server refuse such a value (see doc.go).
		"replicas overflows int32":    {obj: map[string]any{"spec": map[string]any{"replicas": int64(math.MaxInt64)}}},
		"replicas is a fraction":      {obj: map[string]any{"spec": map[string]any{"replicas": 1.5}}, wantErr: true},
		"replicas is NaN":             {obj: map[string]any{"spec": map[string]any{"replicas": math.NaN()}}, wantErr: true},
		"replicas is null":            {obj: map[string]any{"spec": map[string]any{"replicas": nil}}},
		"selector is a string":        {obj: map[string]any{"spec": map[string]any{"selector": "app=web"}}, wantErr: true},
		"containers is a map":         {obj: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": map[string]any{}}}}}, wantErr: true},
		"quantity is garbage":         {obj: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"overhead": map[string]any{"cpu": "lots"}}}}}, wantErr: true},
		"timestamp is garbage":        {obj: map[string]any{"metadata": map[string]any{"creationTimestamp": "yesterday"}}, wantErr: true},
		"conditions hold a number":    {obj: map[string]any{"status": map[string]any{"conditions": []any{int64(1)}}}, wantErr: true},
		"apiVersion is a number":      {obj: map[string]any{"apiVersion": int64(1)}, wantErr: true},
		"kind is a map":               {obj: map[string]any{"kind": map[string]any{}}, wantErr: true},
		"unknown fields are kept out": {obj: map[string]any{"spec": map[string]any{"surprise": true}}},
		// Values a JSON decoder never produces, as a hand-made fake might hold them.
		"go int":         {obj: map[string]any{"spec": map[string]any{"replicas": 3}}},
		"go []string":    {obj: map[string]any{"metadata": map[string]any{"finalizers": []string{"a"}}}},
		"go struct":      {obj: map[string]any{"spec": weird{A: 1}}, wantErr: true},
		"go func":        {obj: map[string]any{"spec": func() {}}, wantErr: true},
		"go channel":     {obj: map[string]any{"status": make(chan int)}, wantErr: true},
		"typed nil map":  {obj: map[string]any{"spec": map[string]any(nil)}},
		"nested nil any": {obj: map[string]any{"status": map[string]any{"conditions": []any{nil}}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			require.NotPanics(t, func() { checkConversion(t, c, tc.obj) })
			_, err := c.FromUnstructured(&unstructured.Unstructured{Object: tc.obj})
			if tc.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
		})
	}
}

// panicky's UnmarshalJSON panics: a bug in a user's type must surface as a conversion
// error for the object that triggered it, not crash the controller.
type panicky struct{}

func (*panicky) UnmarshalJSON([]byte) error { panic("bug in user code") }

type panickyObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              panicky `json:"spec"`
}

func (p *panickyObject) DeepCopyObject() runtime.Object {
	c := *p
	p.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

func TestFromUnstructuredRecoversFromPanicsInUserTypes(t *testing.T) {
	c, err := customresource.NewClient[*panickyObject](newFake(t), v1alpha1.GVR, customresource.WithKind(v1alpha1.Kind))
	require.NoError(t, err)
	_, err = c.FromUnstructured(&unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": "default", "name": "boom"},
		"spec":     map[string]any{"x": int64(1)},
	}})
	var convErr *customresource.ConversionError
	require.ErrorAs(t, err, &convErr)
	require.Equal(t, "boom", convErr.Name)
	require.ErrorContains(t, err, "converter panicked: bug in user code")
	require.False(t, errors.Is(err, customresource.ErrInvalidInput))
}

// FuzzFromUnstructured feeds arbitrary JSON, decoded the way the dynamic client decodes
// response bodies, to the conversion.
func FuzzFromUnstructured(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		`{"apiVersion":"examples.ctrlkit.dev/v1alpha1","kind":"PodSet","metadata":{"name":"web","namespace":"default","labels":{"app":"web"}},"spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx","resources":{"limits":{"cpu":"500m"}}}]}}},"status":{"replicas":3,"readyReplicas":2,"observedGeneration":1,"conditions":[{"type":"Available","status":"True","lastTransitionTime":"2024-01-01T00:00:00Z","reason":"Ready","message":""}]}}`,
		`{"metadata":"x"}`,
		`{"spec":{"replicas":"three"}}`,
		`{"spec":{"replicas":1e400}}`,
		`{"spec":{"replicas":-1.5}}`,
		`{"spec":{"template":{"spec":{"containers":[{"ports":[{"containerPort":"http"}]}]}}}}`,
		`{"metadata":{"creationTimestamp":12}}`,
		`{"status":{"conditions":[null,{"type":1}]}}`,
		`{"spec":{"template":{"spec":{"overhead":{"cpu":"1Ki"},"containers":[{"resources":{"requests":{"memory":"-0"}}}]}}}}`,
	} {
		f.Add([]byte(seed))
	}
	c, err := customresource.NewClient[*v1alpha1.PodSet](dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), v1alpha1.GVR)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var obj map[string]any
		if err := utiljson.Unmarshal(data, &obj); err != nil || obj == nil {
			return
		}
		checkConversion(t, c, obj)
	})
}

// A value that does not fit its field is reported with the object, the field, and what the
// field expected and found: not the converter's bare "unrecognized type: int32".
func TestConversionErrorNamesTheField(t *testing.T) {
	c := newClient(t, newFake(t))
	cases := []struct {
		obj        map[string]any
		field, msg string
	}{
		{map[string]any{"spec": map[string]any{"replicas": "three"}},
			"spec.replicas", `spec.replicas: expected int32, got string "three"`},
		{map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "web", "ports": []any{map[string]any{"containerPort": "http"}}},
		}}}}}, "spec.template.spec.containers[0].ports[0].containerPort",
			`spec.template.spec.containers[0].ports[0].containerPort: expected int32, got string "http"`},
		{map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"overhead": map[string]any{"cpu": "lots"}}}}},
			`spec.template.spec.overhead["cpu"]`, `spec.template.spec.overhead["cpu"]: expected resource.Quantity, got string "lots"`},
	}
	for _, tc := range cases {
		tc.obj["metadata"] = map[string]any{"namespace": "default", "name": "web"}
		_, err := c.FromUnstructured(&unstructured.Unstructured{Object: tc.obj})
		var convErr *customresource.ConversionError
		require.ErrorAs(t, err, &convErr)
		require.Equal(t, tc.field, convErr.Field)
		require.ErrorContains(t, err, `customresource: cannot convert podsets.v1alpha1.examples.ctrlkit.dev "default/web" to *v1alpha1.PodSet: `+tc.msg)
	}
}
