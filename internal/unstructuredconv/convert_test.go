package unstructuredconv

import (
	"errors"
	"math"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// set is a PodSet-like custom resource: inline TypeMeta, embedded metadata,
// nested structs, lists of structs, maps, quantities, pointers.
type set struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              setSpec `json:"spec"`
}

type setSpec struct {
	Replicas  *int32            `json:"replicas,omitempty"`
	Paused    bool              `json:"paused,omitempty"`
	Ratio     float64           `json:"ratio,omitempty"`
	Selector  map[string]string `json:"selector,omitempty"`
	Members   []member          `json:"members,omitempty"`
	Raw       []byte            `json:"raw,omitempty"`
	Untouched any               `json:"untouched,omitempty"`
}

type member struct {
	Name   string                       `json:"name"`
	Ports  []int32                      `json:"ports,omitempty"`
	Limits map[string]resource.Quantity `json:"limits,omitempty"`
}

var setKind = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Set"}

func TestFromUnstructuredNamesTheField(t *testing.T) {
	conv, err := New[*set](setKind)
	if err != nil {
		t.Fatal(err)
	}
	members := func(m ...any) map[string]any { return map[string]any{"spec": map[string]any{"members": m}} }
	cases := []struct {
		name string
		obj  map[string]any
		want string
	}{
		{"string in int32", map[string]any{"spec": map[string]any{"replicas": "three"}},
			`spec.replicas: expected int32, got string "three"`},
		{"fraction in int32", map[string]any{"spec": map[string]any{"replicas": 1.5}},
			`spec.replicas: expected int32, got float64 1.5`},
		{"NaN in int32", map[string]any{"spec": map[string]any{"replicas": math.NaN()}},
			`spec.replicas: expected int32, got float64 NaN`},
		{"number in bool", map[string]any{"spec": map[string]any{"paused": int64(1)}},
			`spec.paused: expected bool, got int64 1`},
		{"string in float", map[string]any{"spec": map[string]any{"ratio": "half"}},
			`spec.ratio: expected float64, got string "half"`},
		{"spec is a list", map[string]any{"spec": []any{int64(1)}},
			`spec: expected object, got array`},
		{"metadata is a string", map[string]any{"metadata": "x"},
			`metadata: expected object, got string "x"`},
		{"label value is a map", map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "ok", "b": map[string]any{}}}},
			`metadata.labels["b"]: expected string, got object`},
		{"inline field", map[string]any{"kind": "Set", "apiVersion": "example.com/v1", "spec": map[string]any{"selector": "app=web"}},
			`spec.selector: expected object, got string "app=web"`},
		{"list element", members(map[string]any{"name": "a"}, map[string]any{"name": int64(2)}),
			`spec.members[1].name: expected string, got int64 2`},
		{"nested list", members(map[string]any{"name": "a", "ports": []any{int64(80), "http"}}),
			`spec.members[0].ports[1]: expected int32, got string "http"`},
		{"members is a map", map[string]any{"spec": map[string]any{"members": map[string]any{}}},
			`spec.members: expected array, got object`},
		{"quantity", members(map[string]any{"name": "a", "limits": map[string]any{"cpu": "lots"}}),
			`spec.members[0].limits["cpu"]: expected resource.Quantity, got string "lots": quantities must match the regular expression`},
		{"timestamp", map[string]any{"metadata": map[string]any{"creationTimestamp": "yesterday"}},
			`metadata.creationTimestamp: expected v1.Time, got string "yesterday"`},
		{"bytes", map[string]any{"spec": map[string]any{"raw": "%%%"}},
			`spec.raw: expected base64 string, got string "%%%"`},
		{"Go value", map[string]any{"spec": struct{ A int }{1}},
			`spec: expected object, got Go value of type struct { A int }`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := conv.FromUnstructured(tc.obj)
			if got != nil {
				t.Errorf("got an object with the error: %+v", got)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T), want a *FieldError", err, err)
			}
			if msg := err.Error(); len(msg) < len(tc.want) || msg[:len(tc.want)] != tc.want {
				t.Fatalf("error\n%s\nwant it to start with\n%s", msg, tc.want)
			}
			if fe.Err == nil || errors.Unwrap(err) != fe.Err {
				t.Errorf("the converter's error is not wrapped: %v", fe.Err)
			}
		})
	}
}

func TestFromUnstructuredGoodInput(t *testing.T) {
	conv, err := New[*set](setKind)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := conv.FromUnstructured(map[string]any{
		"apiVersion": "example.com/v1", "kind": "Set",
		"metadata": map[string]any{"name": "web", "labels": map[string]any{"app": "web"}},
		"spec": map[string]any{"replicas": 3, "ratio": int64(1), "untouched": []any{"x"}, "members": []any{
			map[string]any{"name": "a", "ports": []any{float64(80)}, "limits": map[string]any{"cpu": "500m"}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if *obj.Spec.Replicas != 3 || obj.Spec.Ratio != 1 || obj.Spec.Members[0].Ports[0] != 80 || obj.Labels["app"] != "web" {
		t.Fatalf("converted to %+v", obj)
	}
	m, err := conv.ToUnstructured(&set{Spec: setSpec{Replicas: obj.Spec.Replicas}})
	if err != nil {
		t.Fatal(err)
	}
	if m["apiVersion"] != "example.com/v1" || m["kind"] != "Set" {
		t.Fatalf("ToUnstructured left apiVersion %v and kind %v", m["apiVersion"], m["kind"])
	}
}

func TestFromUnstructuredRefusesOtherKinds(t *testing.T) {
	conv, err := New[*set](setKind)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []map[string]any{{"kind": "Other"}, {"kind": map[string]any{}}} {
		if _, err := conv.FromUnstructured(obj); !errors.Is(err, ErrWrongKind) {
			t.Errorf("%v: error %v, want ErrWrongKind", obj, err)
		}
	}
	if _, err := conv.FromUnstructured(map[string]any{"apiVersion": "example.com/v2"}); !errors.Is(err, ErrWrongAPIVersion) {
		t.Errorf("error %v, want ErrWrongAPIVersion", err)
	}
	// Without a kind to check, only the version is.
	anyKind, err := New[*set](setKind.GroupVersion().WithKind(""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anyKind.FromUnstructured(map[string]any{"kind": "Other", "apiVersion": "example.com/v1"}); err != nil {
		t.Errorf("kind checked without a kind: %v", err)
	}
	if _, err := New[set](setKind); !errors.Is(err, ErrNotStructPointer) {
		t.Errorf("New of a struct: %v, want ErrNotStructPointer", err)
	}
}

type panicky struct{}

func (*panicky) UnmarshalJSON([]byte) error  { panic("bug in user code") }
func (panicky) MarshalJSON() ([]byte, error) { panic("bug in user code") }

type panickySet struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              panicky `json:"spec"`
}

func TestConverterRecoversFromPanics(t *testing.T) {
	conv, err := New[*panickySet](schema.GroupVersionKind{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conv.FromUnstructured(map[string]any{"spec": map[string]any{}}); err == nil || err.Error() != "converter panicked: bug in user code" {
		t.Errorf("FromUnstructured: %v", err)
	}
	if _, err := conv.ToUnstructured(&panickySet{}); err == nil || err.Error() != "converter panicked: bug in user code" {
		t.Errorf("ToUnstructured: %v", err)
	}
}
